package api_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
)

func TestClusterViewShapes(t *testing.T) {
	t.Parallel()
	at := "2026-04-26T10:00:00.000Z"
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{name: "EmptyReplicaList", v: api.ReplicaList{}, want: `{"replicas":[]}`},
		{name: "Replica", v: api.ReplicaList{Replicas: []api.Replica{{Instance: "a", Version: "1", StartedAt: at,
			LastSeenAt: at, Ready: true, Jobs: []api.ReplicaJob{{Name: "retention", LastSuccessAt: &at,
				LastResult: "success", LastCycle: "success", LastRunAt: &at}, {Name: "eviction"}}}, {Instance: "b"}}},
			want: `{"replicas":[
			  {"instance":"a","hostname":"","pid":0,"version":"1","startedAt":"` + at + `","lastSeenAt":"` + at + `",
			   "stale":false,"ready":true,"draining":false,"parkedLongPolls":0,"pool":{"inUse":0,"max":0},
			   "spool":{"pending":0,"oldestPendingAgeSeconds":0,"healthy":false},
			   "jobs":[{"name":"retention","lastSuccessAt":"` + at + `","lastResult":"success","lastCycle":"success",
			            "lastRunAt":"` + at + `"},
			           {"name":"eviction","lastSuccessAt":null,"lastResult":"","lastCycle":"","lastRunAt":null}],
			   "systemd":{"socketActivated":false,"watchdogSec":0}},
			  {"instance":"b","hostname":"","pid":0,"version":"","startedAt":"","lastSeenAt":"","stale":false,
			   "ready":false,"draining":false,"parkedLongPolls":0,"pool":{"inUse":0,"max":0},
			   "spool":{"pending":0,"oldestPendingAgeSeconds":0,"healthy":false},"jobs":[],
			   "systemd":{"socketActivated":false,"watchdogSec":0}}]}`},
		{name: "EmptyLongPolls", v: api.LongPollList{Instance: "a"},
			want: `{"instance":"a","total":0,"waiters":[],"truncated":false}`},
		{name: "LongPolls", v: api.LongPollList{Instance: "a", Total: 2, Waiters: []api.LongPollWaiter{{Queue: "q",
			ConsumerGroup: "__QUEUE_MODE__", Partition: "*", Count: 2, OldestParkedSeconds: 1.5}}},
			want: `{"instance":"a","total":2,"truncated":false,"waiters":[
			  {"queue":"q","consumerGroup":"__QUEUE_MODE__","partition":"*","count":2,"oldestParkedSeconds":1.5}]}`},
		{name: "EmptyConsumerLag", v: api.ConsumerLag{BucketMinutes: 1, BucketSeconds: 60},
			want: `{"timeRange":{"from":"","to":""},"bucketMinutes":1,"bucketSeconds":60,"series":[]}`},
		{name: "ConsumerLag", v: api.ConsumerLag{BucketMinutes: 5, BucketSeconds: 300, Series: []api.ConsumerLagPoint{{
			Bucket: "2026-04-26T10:00:00Z", Group: "g", Queue: "q", TotalLag: 7, MaxTimeLag: 61.5, PartitionsWithLag: 2}}},
			want: `{"timeRange":{"from":"","to":""},"bucketMinutes":5,"bucketSeconds":300,"series":[
			  {"bucket":"2026-04-26T10:00:00Z","group":"g","queue":"q","totalLag":7,"maxTimeLag":61.5,
			   "partitionsWithLag":2}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(tc.v)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(got))
		})
	}
}
