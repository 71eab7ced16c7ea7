package kadm

import "github.com/Yolean/buckety-controller/drivers"

// DrainPolicy implements drivers.DrainDeclarer. A topic's drain is off
// unless the backend's configuration sets drain.allow: a topic is often
// read by consumers the topic's owner does not know of (another team's
// consumer group, a connector), and DeleteRecords takes every record they
// have not read yet; a platform opts in where topics are reset on purpose
// (test environments).
func (*Driver) DrainPolicy() drivers.DrainPolicy {
	return drivers.DrainPolicy{Supported: true, AllowedByDefault: false}
}
