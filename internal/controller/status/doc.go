// Package status is how both reconcilers write what they found: condition
// builders (Cond, True, False, Unknown, Apply), the deferred status write
// that ends every reconcile (Finish), the record of the controller's own
// writes that keeps it from acting on a stale cache (Written), and the
// events' reporter name.
package status
