package integration

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaAdmin is an out-of-band admin client, as an operator with rpk.
func kafkaAdmin(t *testing.T) (*kadm.Client, *kgo.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker.Addrs...), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl), cl
}

type topicInfo struct {
	exists     bool
	partitions int
	dynamic    map[string]string
}

func topic(t *testing.T, name string) topicInfo {
	t.Helper()
	adm, cl := kafkaAdmin(t)
	return topicWith(t, adm, cl, name)
}

// topicWith is topic on the broker adm and cl reach.
func topicWith(t *testing.T, adm *kadm.Client, cl *kgo.Client, name string) topicInfo {
	t.Helper()
	ctx := context.Background()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(name)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		return topicInfo{}
	}
	info := topicInfo{exists: true, partitions: len(resp.Topics[0].Partitions), dynamic: map[string]string{}}
	rcs, err := adm.DescribeTopicConfigs(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			info.dynamic[c.Key] = c.MaybeValue()
		}
	}
	return info
}

// produceConsume round-trips a record with only the Secret's values, as a
// consumer workload would.
func produceConsume(t *testing.T, bootstrap, topicName, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: topicName, Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatalf("produce to %s via %s: %v", topicName, bootstrap, err)
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.ConsumeTopics(topicName), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume %s: no record %q before timeout", topicName, value)
		}
		found := false
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == value {
				found = true
			}
		})
		if found {
			return
		}
	}
}

func s3Client(t *testing.T, endpoint, region, ak, sk string) *s3.Client {
	t.Helper()
	return s3.New(s3.Options{
		Region: region, BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(ak, sk, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

func rootS3(t *testing.T) *s3.Client {
	return s3Client(t, minio.Endpoint, minio.Region, minio.AccessKey, minio.SecretKey)
}

func bucketExists(t *testing.T, name string) bool {
	t.Helper()
	_, err := rootS3(t).HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: aws.String(name)})
	return err == nil
}

// putGet round-trips an object with only the Secret's values.
func putGet(t *testing.T, data map[string][]byte, key, body string) {
	t.Helper()
	cl := s3Client(t, string(data["endpoint"]), string(data["region"]), string(data["accessKeyID"]), string(data["secretAccessKey"]))
	ctx := context.Background()
	bucket := aws.String(string(data["bucket"]))
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(key), Body: bytes.NewReader([]byte(body))}); err != nil {
		t.Fatalf("put with the Secret's keys: %v", err)
	}
	out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get with the Secret's keys: %v", err)
	}
	defer out.Body.Close()
	got, err := io.ReadAll(out.Body)
	if err != nil || string(got) != body {
		t.Fatalf("get: want %q, got %q (%v)", body, got, err)
	}
}
