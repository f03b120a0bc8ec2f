package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/docshard/docshard"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/spillover"
	"github.com/docshard/docshard/store"
)

func newLoadCmd(g *globals) *cobra.Command {
	var workers int
	var create, asJSON bool
	var checkEvery time.Duration
	cmd := &cobra.Command{
		Use:   "load -c FILE [--db LINK] [--workers N] [--json] [PATH|-]",
		Short: "Write JSON-lines documents through the router",
		Long: `load writes one document per line of PATH (standard input for "-" or no PATH) to the
collection the database's resolver puts it in, creating the resolver's collections first when they
do not exist. A spillover database's collections are created from its template, and the next one
is opened whenever the newest fills (checked every --check-every); a managed one's from its
template. Documents are upserted (--create refuses existing ids). It prints the count; on a
terminal it shows a progress bar (a file's bytes: percentage, rate, time left; a count for standard
input). The first bad line (or a line over 2 MB) stops the load with its line number, and so does
Ctrl-C; either way it prints how many documents were written before.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := intFlag("workers", int64(workers), 1, maxWorkers); err != nil {
				return err
			}
			cfg, db, err := g.loadDatabase()
			if err != nil {
				return err
			}
			in := loadInput{r: g.stdin, name: "standard input", size: -1}
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in.r, in.name = f, args[0]
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					in.size = fi.Size()
				}
			} else if isTerminal(g.stdin) {
				fmt.Fprintln(g.stderr, "docshard: reading JSON lines from standard input (the terminal); end with Ctrl-D, or give load a PATH")
			}
			in.rd = newLineReader(in.r, store.MaxDocumentSize)
			st, err := openStore(cfg, g.stderr, false)
			if err != nil {
				return err
			}
			defer st.Close()
			ctx := cmd.Context()
			if _, err := shardstate.Load(ctx, st, db.Link); errors.Is(err, shardstate.ErrNoState) {
				if err := checkFirstLine(in, db.Resolver); err != nil {
					return err
				}
			}
			var coord atomic.Pointer[spillover.Coordinator]
			client := router.New(st, &router.Options{Hooks: router.Hooks{Call: func(ctx context.Context, l, op string, d time.Duration, err error) {
				if c := coord.Load(); c != nil {
					c.Observe(ctx, l, op, d, err)
				}
			}}})
			rt, err := route(ctx, client, st, db, docshard.StateFollow, g.stderr)
			if err != nil {
				return err
			}
			defer rt.Follower.Close()
			if _, ok := rt.Resolver.(*spillover.Resolver); ok {
				if !cmd.Flags().Changed("workers") {
					// The newest collection takes writes past its fill
					// point until a check opens the next (past its limit
					// the store's quota refuses them, and they wait for
					// the next collection): fewer writers keep that small.
					workers = spilloverLoadWorkers
				}
				// The coordinator makes the collections exist (checking
				// the prefix first) and opens the next one whenever the
				// newest fills; it is a process of its own, not a way of
				// creating collections.
				c, err := spillover.Start(ctx, st, db.Link, &spillover.CoordinatorOptions{CheckInterval: checkEvery,
					OnOpen:  func(l string, v int64) { fmt.Fprintf(g.stderr, "opened collection %s (version %d)\n", l, v) },
					OnError: func(err error) { fmt.Fprintf(g.stderr, "docshard: spillover: %s\n", oneLine(err.Error())) }})
				if err != nil {
					return err
				}
				defer c.Close()
				coord.Store(c)
			}
			// One way for every kind: a resolver.Provisioner (managed,
			// spillover) names its collections and template; any other
			// gets every collection it names.
			created, err := client.EnsureCollections(ctx, db.Link, nil)
			if err != nil {
				return err
			}
			for _, l := range created {
				fmt.Fprintf(g.stderr, "created collection %s\n", l)
			}
			stats, err := loadLines(ctx, client, db.Link, in, workers, create, g.stderr)
			stats.Created = orEmpty(created)
			if err == nil {
				if c := coord.Load(); c != nil {
					// A last look, so a collection the load filled is sealed now.
					_, err = c.Check(ctx)
				}
			}
			if asJSON {
				if err != nil {
					stats.Error = err.Error()
				}
				if jerr := writeJSON(g.stdout, stats); jerr != nil {
					return jerr
				}
			}
			if err != nil {
				return fmt.Errorf("%w; %d documents were written before the load stopped (%d lines read)", err, stats.Documents, stats.Lines)
			}
			if !asJSON {
				fmt.Fprintf(g.stdout, "%d documents loaded into %s (%.1f MB in %.1fs, %.0f documents/s)\n", stats.Documents, db.Link,
					float64(stats.Bytes)/1e6, stats.Seconds, float64(stats.Documents)/max(stats.Seconds, 1e-9))
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&workers, "workers", defaultLoadWorkers, "concurrent writers (the durable store commits concurrent writes together: more writers, faster loads)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as one JSON object")
	cmd.Flags().DurationVar(&checkEvery, "check-every", time.Second, "spillover: how often the newest collection's usage is read")
	cmd.Flags().BoolVar(&create, "create", false, "create documents, failing on an existing id, instead of upserting")
	return cmd
}

// defaultLoadWorkers is load's default --workers: on the durable
// embedded store, whose commits take every write waiting at the time,
// loads ran several times faster with 128 writers than with 8 (see
// docs/cli.md, "Why 128 load workers").
const defaultLoadWorkers = 128

// spilloverLoadWorkers is the default --workers for a spillover database,
// whose newest collection fills past its fill point by what the writers
// write between two checks of its usage.
const spilloverLoadWorkers = 8

type loadLine struct {
	no  int
	doc []byte
}

// loadStats is what a load did: its --json output, and the counts printed
// when it stops early.
type loadStats struct {
	Database  string   `json:"database"`
	Documents int64    `json:"documents"`       // written (acknowledged)
	Lines     int      `json:"lines"`           // lines read
	Bytes     int64    `json:"bytes"`           // bytes of the lines written
	Seconds   float64  `json:"seconds"`         // wall time of the writes
	Created   []string `json:"created"`         // collections created first
	Error     string   `json:"error,omitempty"` // why it stopped early
}

// loadInput is the input of a load: its reader, its name in messages, and
// its size in bytes when known (-1 for standard input).
type loadInput struct {
	r    io.Reader
	name string
	size int64
	rd   *lineReader // reads r; made by newLineReader when nil
}

// loadBar shows a load's progress on a terminal: for a file, a bar of its
// bytes written with the percentage, the rate and the time left, and the
// documents written; for standard input, the count and the rate.
func loadBar(stderr io.Writer, in loadInput) *progressbar.ProgressBar {
	if !isTerminal(stderr) {
		return nil
	}
	opts := []progressbar.Option{progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription("loading"),
		progressbar.OptionThrottle(barThrottle), progressbar.OptionShowDescriptionAtLineEnd()}
	if in.size > 0 {
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionShowCount(), progressbar.OptionSetWidth(30), progressbar.OptionSetPredictTime(true))
		return progressbar.NewOptions64(in.size, opts...)
	}
	opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("docs"))
	return progressbar.NewOptions64(-1, opts...)
}

// loadLines writes every non-empty line of in with workers concurrent
// writers, and returns what it did: on an error or a cancelled ctx, the
// documents written before it.
func loadLines(ctx context.Context, c *router.Client, dbLink string, in loadInput, workers int, create bool, stderr io.Writer) (loadStats, error) {
	stats := loadStats{Database: dbLink} // workers: checked with the flags
	bar := loadBar(stderr, in)
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lines := make(chan loadLine, workers*4)
	var done, doneBytes atomic.Int64
	var firstErr error
	var errMu sync.Mutex
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
		errMu.Unlock()
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var l loadLine
				select {
				case next, ok := <-lines:
					if !ok {
						return
					}
					l = next
				case <-ctx.Done():
					return // stopped: the reader may be blocked on input that never comes
				}
				var err error
				if create {
					_, err = c.Create(ctx, dbLink, l.doc, nil)
				} else {
					_, err = c.Upsert(ctx, dbLink, l.doc, nil)
				}
				if err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("%s line %d: %w", in.name, l.no, err))
					}
					continue
				}
				n := done.Add(1)
				b := doneBytes.Add(int64(len(l.doc)) + 1)
				if bar != nil {
					if in.size > 0 {
						_ = bar.Set64(min(b, in.size))
						bar.Describe(fmt.Sprintf("loading: %d documents", n))
					} else {
						_ = bar.Add(1)
					}
				}
			}
		}()
	}
	// The reader runs on its own: a read of standard input can block for
	// ever, and Ctrl-C must still stop the load (the reader is then left
	// behind, which ends with the process).
	rd := in.rd
	if rd == nil {
		rd = newLineReader(in.r, store.MaxDocumentSize)
	}
	var lineNo atomic.Int64
	go func() {
		defer close(lines)
		for {
			doc, err := rd.next()
			lineNo.Store(int64(rd.no))
			if err == io.EOF {
				return
			}
			if err != nil {
				fail(fmt.Errorf("%s line %d: %w", in.name, rd.no, err))
				return
			}
			if doc = bytes.TrimSpace(doc); len(doc) == 0 {
				continue
			}
			if err := jsonLine(doc); err != nil {
				fail(fmt.Errorf("%s line %d: %w", in.name, rd.no, err))
				return
			}
			select {
			case lines <- loadLine{no: rd.no, doc: append([]byte(nil), doc...)}:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	if bar != nil {
		_ = bar.Exit()
		fmt.Fprint(stderr, "\r\033[K") // the bar's line, cleared
	}
	stats.Documents, stats.Bytes, stats.Lines = done.Load(), doneBytes.Load(), int(lineNo.Load())
	stats.Seconds = time.Since(start).Seconds()
	errMu.Lock()
	err := firstErr
	errMu.Unlock()
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
	if err != nil {
		stats.Error = err.Error()
	}
	return stats, err
}

// errJSONArray is wrapped by the error of a line holding a JSON array.
var errJSONArray = errors.New("the line is a JSON array: load reads one JSON document per line (JSON Lines); convert a file holding one array with: jq -c '.[]' FILE")

// jsonLine checks a non-empty line before it is written: a JSON array (a
// file holding one array of documents, the usual mistake) is refused with
// what to do, not as "not a JSON object".
func jsonLine(doc []byte) error {
	if doc[0] == '[' {
		return errJSONArray
	}
	return nil
}

// checkFirstLine reads the input's first document (kept for the load to
// read again) and places it by r, the resolver a new database's state
// would be seeded from: a wrong partitionKey, an array, a line that is not
// a document fail here, before the state and the collections are made, so
// a corrected file or configuration starts afresh. An empty input passes.
func checkFirstLine(in loadInput, r resolver.Resolver) error {
	doc, err := in.rd.peek()
	if err == io.EOF {
		return nil
	}
	if err == nil {
		if err = jsonLine(doc); err == nil {
			var key any
			if key, err = r.PartitionKey(json.RawMessage(doc)); err == nil {
				_, err = r.ResolveForCreate(key)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("%s line %d: %w (nothing was created: the database has no shared state or collections yet; fix the line or the resolver and load again)", in.name, in.rd.peekedNo, err)
	}
	return nil
}

// lineReader reads lines of at most max bytes; a longer line is an error
// that says how long it is (it is read to its end to say so).
type lineReader struct {
	br  *bufio.Reader
	max int
	no  int // the number of the line last returned
	buf []byte
	// peeked is the first non-empty line, read by peek and returned again
	// by next (with peekedNo) first.
	peeked   []byte
	peekedNo int
}

// peek reads up to the first non-empty line and keeps it for next.
func (l *lineReader) peek() ([]byte, error) {
	for {
		doc, err := l.next()
		if err != nil {
			return nil, err
		}
		if doc = bytes.TrimSpace(doc); len(doc) > 0 {
			l.peeked, l.peekedNo = append([]byte(nil), doc...), l.no
			return l.peeked, nil
		}
	}
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64*1024), max: max}
}

// ErrDocumentTooLarge is wrapped by the error of a line longer than the
// store takes.
var errDocumentTooLarge = errors.New("document too large")

// next returns the next line without its newline; the slice is valid
// until the next call. It returns io.EOF after the last line. A line
// longer than max is read to its end, so the error says its length.
func (l *lineReader) next() ([]byte, error) {
	if l.peeked != nil {
		doc := l.peeked
		l.peeked = nil
		return doc, nil
	}
	l.buf = l.buf[:0]
	size := 0
	for {
		chunk, err := l.br.ReadSlice('\n')
		size += len(chunk)
		if len(l.buf) <= l.max { // keep at most max+1 bytes: a line and its newline
			l.buf = append(l.buf, chunk[:min(len(chunk), l.max+1-len(l.buf))]...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && size == 0:
			return nil, io.EOF
		case err != nil && err != io.EOF:
			return nil, err
		}
		l.no++
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			size--
		}
		if size > l.max {
			return nil, fmt.Errorf("%w (%d bytes, the limit is %d MB)", errDocumentTooLarge, size, l.max>>20)
		}
		return bytes.TrimSuffix(l.buf, []byte("\n")), nil
	}
}

// kindOf returns the resolver kind of a state ("" when it does not say).
