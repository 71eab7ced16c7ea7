// Package iam is a small client for the AWS IAM Query API (version
// 2010-05-08): the calls it takes to give every access a user and a key of
// its own on AWS S3 and on servers that speak the same API (SeaweedFS
// serves it on its S3 port).
//
// Why not github.com/aws/aws-sdk-go-v2/service/iam: the only version the
// module proxy serves (v1.65.0) requires aws-sdk-go-v2 v1.48.0, smithy-go
// v1.28.9 and newer internal/configsources and internal/endpoints/v2 than
// this module pins, so taking it bumps the SDK core under the s3 client
// too; and the calls below are form-encoded POSTs signed with the SigV4
// signer this module already has (service "iam"), whose XML answers are a
// few fields each. The MinIO and VersityGW admin clients in drivers/s3 are
// built the same way. Both were tried against SeaweedFS 4.53 and behave
// alike (the SDK's typed NoSuchEntity, EntityAlreadyExists and
// DeleteConflict exceptions match its answers); with a newer SDK core in
// go.mod, swapping this client for the SDK's is mechanical.
//
// What the client does not hide, because callers must decide on it:
//   - Errors are *Error with the server's code (NoSuchEntity,
//     EntityAlreadyExists, LimitExceeded, DeleteConflict, ...) and the HTTP
//     status; the Is* helpers test the codes.
//   - A user is deleted only after its keys and inline policies are: AWS
//     answers DeleteConflict otherwise (SeaweedFS drops inline policies
//     itself, but refuses while keys remain). DeleteUserAndKeys does the
//     whole sequence.
//   - GetUserPolicy's document is URL-encoded on AWS and plain JSON on
//     SeaweedFS; the client returns the JSON either way (the SDK returns
//     it as sent, so its callers decode too).
//   - SeaweedFS differs from AWS in ways a driver must not trip on: it
//     drops CreateUser's Path and Tags (ListUsers ignores PathPrefix; only
//     TagUser keeps tags), has no limit of two keys, answers success where
//     AWS answers NoSuchEntity (DeleteAccessKey, DeleteUserPolicy,
//     ListAccessKeys of an unknown user), refuses Deny statements in
//     inline policies (MalformedPolicyDocument), by default lets every
//     key create keys of its own user (-s3.iam.selfServiceRequiresGrant
//     turns that off), and takes a key id and secret the caller makes in
//     CreateAccessKey (CreateGivenAccessKey). test/seaweedfs pins each of
//     these but the last, which the s3 driver's TestIAMGrantRequests does.
//   - SeaweedFS answers every IAM request, a read as well, under one lock
//     after loading every user it has: its IAM costs requests times users,
//     whatever the concurrency.
//   - New keys take seconds to work on AWS (IAM is eventually consistent);
//     on SeaweedFS they work at once.
//
// Every request is bounded by the http.Client's timeout and never follows
// a redirect: a signed request must not be resent to another host.
package iam
