package drivers

// InstallationAware is a backend told which installation it serves. The
// owner records of a backend name installations, and a driver that
// writes records of its own accord (a Kafka topic's ID stamped into its
// record) must know which records are its installation's: not only the
// ones it was given in this process, which after a restart are none. The
// controller calls SetInstallation once its installation's name is known,
// before any other call of the backend.
type InstallationAware interface {
	// SetInstallation tells the backend its installation's name
	// (current) and the names it had before (former, formerInstallations
	// in the config): records under any of them are its own.
	SetInstallation(current string, former []string)
}
