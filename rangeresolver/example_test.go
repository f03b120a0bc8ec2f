package rangeresolver_test

import (
	"fmt"
	"time"

	"github.com/docshard/docshard/rangeresolver"
	"github.com/docshard/docshard/resolver"
)

// month is all of month m of 2026, to the last nanosecond, so consecutive
// months leave no gap.
func month(m time.Month) rangeresolver.Range[time.Time] {
	start := time.Date(2026, m, 1, 0, 0, 0, 0, time.UTC)
	return rangeresolver.Range[time.Time]{Low: start, High: start.AddDate(0, 1, 0).Add(-time.Nanosecond)}
}

// A monthly time-series: one collection per month of the first quarter,
// anything else to an overflow collection.
func ExampleNew() {
	var ranges []rangeresolver.Entry[time.Time]
	for m := time.January; m <= time.March; m++ {
		ranges = append(ranges, rangeresolver.Entry[time.Time]{
			Range:  month(m),
			Target: resolver.LinkTarget(fmt.Sprintf("dbs/metrics/colls/2026-%02d", m)),
		})
	}
	r, err := rangeresolver.New(resolver.MustKeyDef("/eventTime"), ranges, resolver.LinkTarget("dbs/metrics/colls/overflow"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, doc := range []string{
		`{"id":"e1","eventTime":"2026-02-14T09:30:00Z"}`,
		`{"id":"e2","eventTime":"2026-03-01T00:30:00+01:00"}`, // 23:30Z on Feb 28
		`{"id":"e3","eventTime":"2026-07-01T12:00:00Z"}`,
	} {
		key, _ := r.PartitionKey([]byte(doc))
		link, _ := r.ResolveForCreate(key)
		fmt.Println(key, "->", link)
	}
	// Every event from 20 January to 10 February:
	links, _ := r.ResolveForRead(rangeresolver.Range[time.Time]{
		Low:  time.Date(2026, 1, 20, 0, 0, 0, 0, time.UTC),
		High: time.Date(2026, 2, 10, 0, 0, 0, 0, time.UTC),
	})
	fmt.Println(links)
	data, _ := resolver.Marshal(r)
	fmt.Println(string(data)[:125] + "...")
	// Output:
	// 2026-02-14T09:30:00Z -> dbs/metrics/colls/2026-02
	// 2026-03-01T00:30:00+01:00 -> dbs/metrics/colls/2026-02
	// 2026-07-01T12:00:00Z -> dbs/metrics/colls/overflow
	// [dbs/metrics/colls/2026-01 dbs/metrics/colls/2026-02]
	// {"kind":"range","partitionKey":"/eventTime","keyType":"time","ranges":[{"low":"2026-01-01T00:00:00Z","high":"2026-01-31T23:59...
}

// Numeric ranges read from the shared JSON form; a key outside every range
// with no default is an error naming the key.
func ExampleNew_numbers() {
	r, err := resolver.Unmarshal([]byte(`{"kind":"range","partitionKey":"/accountNo","keyType":"number",
		"ranges":[{"low":0,"high":99999,"target":"dbs/bank/colls/a0"},
		          {"low":100000,"high":199999,"target":"dbs/bank/colls/a1"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, key := range []any{42, int64(150000), 250000.5} {
		link, err := r.ResolveForCreate(key)
		fmt.Println(key, link, err)
	}
	// Output:
	// 42 dbs/bank/colls/a0 <nil>
	// 150000 dbs/bank/colls/a1 <nil>
	// 250000.5  resolver: no collection for partition key: key 250000.5 (float64): outside every range and no default
}

func ExampleRange_Intersects() {
	jan := month(time.January)
	feb := month(time.February)
	fmt.Println(jan.Intersects(feb), jan.Contains(time.Date(2026, 2, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600))))
	fmt.Println(rangeresolver.Range[string]{Low: "a", High: "m"}.Contains("Zebra"), "(byte order: 'Z' < 'a')")
	// Output:
	// false true
	// false (byte order: 'Z' < 'a')
}
