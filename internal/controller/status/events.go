package status

// EventReporter is the name both controllers record their events under
// (the events' reportingController).
const EventReporter = "buckety-controller"
