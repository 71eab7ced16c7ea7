// Package objects is what the reconcilers set and query on objects besides
// their status: the finalizer, and the field indexes of the manager's
// cache.
package objects
