// Package shared holds what both reconcilers need: resolving the sticky
// (backend, driver, driverMajor) triple against the running configuration,
// claims on backend resource names, field indexes, and condition helpers.
package shared
