package emulator_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos/cosmostest"
	"github.com/docshard/docshard/emulator/emulatortest"
)

// BenchmarkPointOps32 measures point reads and creates of 1 KB documents
// through azcosmos with 32 concurrent clients (b.SetParallelism over
// GOMAXPROCS), against the emulator over the durable store, as docshard
// serve runs it (plain HTTP, and HTTPS), and against cosmium (HTTPS, the
// only way it serves) in the same run.
//
//	go test -run '^$' -bench PointOps32 -benchtime 5000x -count 3 ./emulator
func BenchmarkPointOps32(b *testing.B) {
	type server struct {
		name     string
		endpoint string
		client   *http.Client
	}
	durable := emulatortest.Start(b, &emulatortest.Options{Dir: b.TempDir()})
	durableTLS := emulatortest.Start(b, &emulatortest.Options{Dir: b.TempDir(), TLS: true})
	cosmium, err := cosmostest.Start()
	require.NoError(b, err)
	b.Cleanup(cosmium.Stop)
	servers := []server{
		{"serve-http", durable.Endpoint, durable.HTTPClient()},
		{"serve-https", durableTLS.Endpoint, durableTLS.HTTPClient()},
		{"cosmium-https", cosmium.Endpoint, &http.Client{Transport: &http.Transport{MaxIdleConns: 100, MaxIdleConnsPerHost: 100, ForceAttemptHTTP2: true,
			TLSClientConfig: &tls.Config{RootCAs: cosmium.CertPool, MinVersion: tls.VersionTLS12}}}},
	}
	notes := strings.Repeat("lorem ipsum ", 80)
	parallelism := (32 + gomaxprocs() - 1) / gomaxprocs()
	for _, s := range servers {
		cred, err := azcosmos.NewKeyCredential(emulatortest.Key)
		require.NoError(b, err)
		c, err := azcosmos.NewClientWithKey(s.endpoint, cred, &azcosmos.ClientOptions{
			ClientOptions: azcore.ClientOptions{Transport: s.client, Retry: policy.RetryOptions{MaxRetries: -1}}})
		require.NoError(b, err)
		ctx := context.Background()
		_, err = c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "bench"}, nil)
		require.NoError(b, err)
		db, _ := c.NewDatabase("bench")
		_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
		require.NoError(b, err)
		cc, _ := db.NewContainer("c")
		const seeded = 1000
		for i := 0; i < seeded; i++ {
			_, err := cc.CreateItem(ctx, azcosmos.NewPartitionKeyString(fmt.Sprint("k", i%50)), fmt.Appendf(nil, `{"id":"s%d","pk":"k%d","notes":%q}`, i, i%50, notes), nil)
			require.NoError(b, err)
		}
		b.Run(s.name+"/read", func(b *testing.B) {
			var next atomic.Int64
			b.SetParallelism(parallelism)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1) * 7919 % seeded
					if _, err := cc.ReadItem(ctx, azcosmos.NewPartitionKeyString(fmt.Sprint("k", i%50)), fmt.Sprint("s", i), nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		var created atomic.Int64
		b.Run(s.name+"/create", func(b *testing.B) {
			b.SetParallelism(parallelism)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := created.Add(1)
					if _, err := cc.CreateItem(ctx, azcosmos.NewPartitionKeyString(fmt.Sprint("k", i%50)), fmt.Appendf(nil, `{"id":"c%d","pk":"k%d","notes":%q}`, i, i%50, notes), nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func gomaxprocs() int { return max(1, runtime.GOMAXPROCS(0)) }
