package cosmos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/docshard/docshard/internal/cursor"
	"github.com/docshard/docshard/internal/localquery"
	"github.com/docshard/docshard/internal/redact"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/store"
)

// QueryMode says where cross-partition queries run.
type QueryMode int

const (
	// QueryAuto runs on the service what the gateway can serve and
	// evaluates the rest here (the default).
	QueryAuto QueryMode = iota
	// QueryLocal evaluates every query here over the container's
	// documents, pushing nothing down but the partition key. For emulators
	// whose query engine is not faithful.
	QueryLocal
)

// EmulatorKey is the well-known account key of the Azure Cosmos DB
// emulator, which docshard serve also answers by default. An Account with
// a loopback endpoint and neither Key nor Credential uses it.
const EmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// Account is one Cosmos DB account: an endpoint and a credential.
type Account struct {
	// Endpoint is https://ACCOUNT.documents.azure.com:443/; a loopback
	// endpoint (an emulator, docshard serve) may use http://.
	Endpoint string
	// Key is the account key (base64). Never put it in a file; read it
	// from the environment. Empty with a loopback endpoint and no
	// Credential means EmulatorKey.
	Key string
	// Credential authenticates with Microsoft Entra ID instead of a key.
	Credential azcore.TokenCredential
}

// String describes the account without its key or credential: the
// endpoint, and which of them is set.
func (a Account) String() string {
	return fmt.Sprintf("cosmos.Account{Endpoint: %q, Key: %q, Credential: %s}", a.Endpoint, redact.Secret(a.Key), credentialSet(a.Credential))
}

// GoString is String: %#v does not show the key either.
func (a Account) GoString() string { return a.String() }

// Format keeps the key out of every fmt verb.
func (a Account) Format(f fmt.State, verb rune) { redact.Format(f, verb, a.String()) }

func credentialSet(c azcore.TokenCredential) string {
	if c == nil {
		return "nil"
	}
	return "set"
}

// Options configure the store. Endpoint and one of Key or Credential are
// required.
type Options struct {
	// Account is the default account.
	Account
	// Accounts binds database links ("dbs/app") or collection links
	// ("dbs/app/colls/c7") to other accounts; the most specific binding
	// wins.
	Accounts map[string]Account
	// HTTPClient sends the requests; nil means the SDK's default. Tests
	// use it to trust a local emulator's certificate.
	HTTPClient *http.Client
	// QueryMode says where cross-partition queries run.
	QueryMode QueryMode
	// MaxThrottleRetries is how often the SDK itself retries a throttled
	// (429) request, after the service's retry-after, before the store
	// returns store.ErrThrottled; 0 (and -1) means never. Leave it 0 when
	// the store is used through docshard's retry layer (package
	// store/retry: the router, a reshard, the spillover coordinator and
	// the shared state all are), which retries throttled calls itself
	// after the same retry-after: two layers would multiply their attempts
	// (nine of its attempts of three SDK retries each were 36 requests for
	// one throttled call). Set it only for a store used without that
	// layer.
	MaxThrottleRetries int
	// PageSize is the page size when the caller gives no hint; 0 means
	// 100.
	PageSize int
	// Cursors is how many locally evaluated query results are kept for
	// their continuation tokens; 0 means 32. They hold at most
	// 64 MiB of JSON in all; a larger result is not kept, and each of its
	// pages re-runs the query.
	Cursors int
}

// String describes the options without any account key.
func (o Options) String() string {
	var b strings.Builder
	b.WriteString("cosmos.Options{Account: " + o.Account.String())
	links := make([]string, 0, len(o.Accounts))
	for l := range o.Accounts {
		links = append(links, l)
	}
	sort.Strings(links)
	for _, l := range links {
		fmt.Fprintf(&b, ", Accounts[%q]: %s", l, o.Accounts[l])
	}
	fmt.Fprintf(&b, ", QueryMode: %d, MaxThrottleRetries: %d, PageSize: %d, Cursors: %d}", o.QueryMode, o.MaxThrottleRetries, o.PageSize, o.Cursors)
	return b.String()
}

// GoString is String: %#v does not show a key either.
func (o Options) GoString() string { return o.String() }

// Format keeps every key out of every fmt verb.
func (o Options) Format(f fmt.State, verb rune) { redact.Format(f, verb, o.String()) }

// maxCursorBytes bounds the JSON the locally evaluated results' cursors
// hold in all.
const maxCursorBytes = 64 << 20

// Store is the Cosmos DB store.
type Store struct {
	opts     Options
	def      *azcosmos.Client
	bound    map[string]*azcosmos.Client // by database or collection link
	mu       sync.RWMutex
	specs    map[string]*containerSpec // by collection link
	cursors  *localquery.Cursors
	pages    *cursor.Cache[servicePageCopy]
	closedMu sync.RWMutex
	closed   bool
	fenced   bool // every endpoint is docshard serve with fencing: writes carry their epoch (Open)
	// wholeQueries: every endpoint is docshard serve with its query
	// extension, which answers any query whole (Open; see Query).
	wholeQueries bool
	// marks: every endpoint is docshard serve with its reshard extension:
	// writes carry store.WriteOptions.Reshard, change-feed reads
	// store.ChangeFeedOptions.HideReshard (Open).
	marks bool
}

var _ store.Store = (*Store)(nil)

// String describes the store by its default endpoint, without any key.
func (s *Store) String() string { return fmt.Sprintf("cosmos.Store{Endpoint: %q}", s.opts.Endpoint) }

// Format keeps every key out of every fmt verb (the store holds its
// options).
func (s *Store) Format(f fmt.State, verb rune) { redact.Format(f, verb, s.String()) }

// New validates the options, connects, and checks within ctx that the
// account answers. Errors name what is wrong (missing endpoint, malformed
// endpoint, missing or malformed key, unreachable host, rejected
// credentials) and never contain the key.
func New(ctx context.Context, opts *Options) (*Store, error) {
	if opts == nil {
		return nil, fmt.Errorf("cosmos: no options: an endpoint and a key or credential are required")
	}
	o := *opts
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	if o.Cursors <= 0 {
		o.Cursors = 32
	}
	s := &Store{opts: o, bound: map[string]*azcosmos.Client{}, specs: map[string]*containerSpec{}, cursors: localquery.NewCursors(o.Cursors, maxCursorBytes), pages: cursor.NewCache[servicePageCopy](o.Cursors)}
	var err error
	if s.def, err = s.client("default account", o.Account); err != nil {
		return nil, err
	}
	for l, acct := range o.Accounts {
		key := strings.Trim(l, "/")
		if _, err := link.ParseCollection(key); err != nil {
			if _, err := link.ParseDatabase(key); err != nil {
				return nil, fmt.Errorf("cosmos: Accounts[%q]: not a database or collection link", l)
			}
		}
		if s.bound[key], err = s.client(fmt.Sprintf("account of %s", l), acct); err != nil {
			return nil, err
		}
	}
	if err := s.ping(ctx, s.def, o.Endpoint); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Store) client(what string, a Account) (*azcosmos.Client, error) {
	if a.Endpoint == "" {
		return nil, fmt.Errorf("cosmos: %s: the endpoint is missing (https://ACCOUNT.documents.azure.com:443/)", what)
	}
	u, err := url.Parse(a.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("cosmos: %s: malformed endpoint %q: want https://HOST[:PORT]/", what, a.Endpoint)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("cosmos: %s: endpoint %q uses http; only a loopback emulator may skip TLS", what, a.Endpoint)
	}
	// The SDK retries nothing unless asked: throttling belongs to the
	// retry layer (store/retry), MaxThrottleRetries.
	retries := int32(s.opts.MaxThrottleRetries)
	if retries <= 0 {
		retries = -1 // azcore: none (0 would mean its default, 3)
	}
	co := &azcosmos.ClientOptions{EnableContentResponseOnWrite: true, ClientOptions: azcore.ClientOptions{
		// Documents without a partition-key value: see undefinedkey.go;
		// patches: see patch.go.
		PerCallPolicies: []policy.Policy{undefinedKeyPolicy{}, patchBodyPolicy{}},
		Retry: policy.RetryOptions{
			MaxRetries:    retries,
			RetryDelay:    50 * time.Millisecond,
			MaxRetryDelay: 5 * time.Second,
			// When asked to, only throttling is retried, after the service's
			// retry-after: a request that failed in transport may have been
			// applied, and a rejected one will be rejected again.
			StatusCodes: []int{http.StatusTooManyRequests},
			ShouldRetry: func(resp *http.Response, err error) bool {
				return err == nil && resp != nil && resp.StatusCode == http.StatusTooManyRequests
			},
		},
	}}
	if s.opts.HTTPClient != nil {
		co.Transport = s.opts.HTTPClient
	}
	if a.Key == "" && a.Credential == nil && isLoopback(u.Hostname()) {
		a.Key = EmulatorKey
	}
	switch {
	case a.Credential != nil:
		c, err := azcosmos.NewClient(a.Endpoint, a.Credential, co)
		if err != nil {
			return nil, fmt.Errorf("cosmos: %s: %v", what, err)
		}
		return c, nil
	case a.Key != "":
		cred, err := azcosmos.NewKeyCredential(a.Key)
		if err != nil {
			return nil, fmt.Errorf("cosmos: %s: the account key is not valid base64 (check DOCSHARD_STORE_KEY)", what)
		}
		c, err := azcosmos.NewClientWithKey(a.Endpoint, cred, co)
		if err != nil {
			return nil, fmt.Errorf("cosmos: %s: %v", what, err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("cosmos: %s: no credential: set the account key (DOCSHARD_STORE_KEY) or a TokenCredential", what)
}

// LoopbackEndpoint reports whether an endpoint URL names this machine
// (localhost or a loopback address): the endpoints that may use http:// and
// default to EmulatorKey.
func LoopbackEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	return err == nil && isLoopback(u.Hostname())
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ping checks that the account answers: reading a database that need not
// exist is enough (404 is an answer). The SDK's first request also fetches
// the account description, which does not always honour ctx, so ping
// returns at ctx's deadline whatever the request does.
func (s *Store) ping(ctx context.Context, c *azcosmos.Client, endpoint string) error {
	db, err := c.NewDatabase("docshard-ping")
	if err != nil {
		return fmt.Errorf("cosmos: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.Read(ctx, nil)
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil || notFound(err) {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("cosmos: %s did not answer before the deadline: %w", endpoint, err)
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		if re.StatusCode == http.StatusUnauthorized || re.StatusCode == http.StatusForbidden {
			return fmt.Errorf("cosmos: %s rejected the credentials (%s): the key is not the account's; docshard reads it from DOCSHARD_STORE_KEY (for docshard serve: the key serve runs with, from its DOCSHARD_SERVE_KEY, or the emulator key when that is unset)", endpoint, statusText(re))
		}
		return fmt.Errorf("cosmos: %s answered %s", endpoint, statusText(re))
	}
	return fmt.Errorf("cosmos: cannot reach %s: %v", endpoint, redactKeys(err.Error(), s.opts))
}

// statusText is a response error's status for a message: "status 401
// Unauthorized", with the service's error code when it adds one.
func statusText(re *azcore.ResponseError) string {
	t := fmt.Sprintf("status %d %s", re.StatusCode, http.StatusText(re.StatusCode))
	if c := re.ErrorCode; c != "" && !strings.Contains(c, http.StatusText(re.StatusCode)) {
		t += ", " + c
	}
	return t
}

// redactKeys removes any account key from a message.
func redactKeys(msg string, o Options) string {
	keys := []string{o.Key}
	for _, a := range o.Accounts {
		keys = append(keys, a.Key)
	}
	for _, k := range keys {
		if k != "" {
			msg = strings.ReplaceAll(msg, k, "***")
		}
	}
	return msg
}

// Close marks the store closed; later calls fail with store.ErrUnavailable.
func (s *Store) Close() error {
	s.closedMu.Lock()
	s.closed = true
	s.closedMu.Unlock()
	return nil
}

func (s *Store) checkOpen(op, l string) error {
	s.closedMu.RLock()
	defer s.closedMu.RUnlock()
	if s.closed {
		return &store.Error{Kind: store.ErrClosed, Op: op, Link: l}
	}
	return nil
}

// accountFor returns the client of the account a collection lives in.
func (s *Store) accountFor(c link.Collection) *azcosmos.Client {
	if cl, ok := s.bound[c.String()]; ok {
		return cl
	}
	if cl, ok := s.bound[c.DatabaseLink()]; ok {
		return cl
	}
	return s.def
}

// container returns the SDK client of a collection link.
func (s *Store) container(op, l string) (*azcosmos.ContainerClient, link.Collection, error) {
	if err := s.checkOpen(op, l); err != nil {
		return nil, link.Collection{}, err
	}
	c, err := link.ParseCollection(l)
	if err != nil {
		return nil, c, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	cc, err := s.accountFor(c).NewContainer(c.Database, c.Collection)
	if err != nil {
		return nil, c, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	return cc, c, nil
}
