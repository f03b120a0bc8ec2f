package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/docshard/docshard/internal/redact"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/resolver"
)

// EnvPrefix is the prefix of environment variables that override settings.
const EnvPrefix = "DOCSHARD"

// Store kinds.
const (
	StoreEmbedded = "embedded"
	StoreCosmos   = "cosmos"
)

// ErrInvalid is wrapped by every error about the content of a configuration.
var ErrInvalid = errors.New("invalid configuration")

// Config is a loaded configuration file.
type Config struct {
	// File is the path the configuration was read from.
	File string
	// Store says which backend holds the collections.
	Store StoreConfig
	// Databases are the databases and their resolvers, in file order.
	Databases []Database
}

// StoreConfig selects and configures the backend.
type StoreConfig struct {
	// Kind is "embedded" (the default) or "cosmos".
	Kind string
	// Path is the embedded store's directory; empty keeps data in memory.
	// Load makes a relative path written in the file relative to the
	// file's directory (one from DOCSHARD_STORE_PATH stays relative to the
	// working directory).
	Path string
	// Endpoint is the Cosmos DB account endpoint
	// (https://ACCOUNT.documents.azure.com:443/).
	Endpoint string
	// Key is the Cosmos DB account key, from DOCSHARD_STORE_KEY only. It is
	// never printed: String and the %v verbs show it as "***".
	Key string
	// Accounts bind databases or single collections to other Cosmos DB
	// accounts (the file's store.accounts; cosmos.Options.Accounts), so a
	// database's collections span several accounts, the state's collection
	// staying in Endpoint's unless its database is bound. Kind cosmos only.
	Accounts []Account
}

// Account is one entry of store.accounts: another Cosmos DB account that
// holds a database or a collection.
//
//	store:
//	  kind: cosmos
//	  endpoint: http://127.0.0.1:8081/       # docshard serve: the state, the old collections
//	  accounts:
//	    - bind: dbs/app/colls/u2              # a collection (or dbs/app: the whole database)
//	      endpoint: https://b.documents.azure.com:443/
//	      keyEnv: DOCSHARD_KEY_B              # the variable that holds its key
type Account struct {
	// Bind is the database link ("dbs/app") or collection link
	// ("dbs/app/colls/u2") the account holds; the most specific binding
	// wins.
	Bind string
	// Endpoint is the account's endpoint.
	Endpoint string
	// KeyEnv names the environment variable that holds the account's key:
	// keys are never written in the file. Empty means none, which only a
	// loopback endpoint (docshard serve) may go without.
	KeyEnv string
	// Key is the key read from KeyEnv when the file was loaded. It is never
	// printed.
	Key string
}

// String describes the account without its key.
func (a Account) String() string {
	return fmt.Sprintf("%s at %s%s", a.Bind, a.Endpoint, keyNote(a.Key))
}

// GoString keeps the key out of %#v.
func (a Account) GoString() string { return "config.Account{" + a.String() + "}" }

// Format keeps the key out of every verb: %#v writes GoString, the others
// String.
func (a Account) Format(f fmt.State, verb rune) { formatKeyless(f, verb, a.String(), a.GoString()) }

// keyNote says whether a key is set, never what it is.
func keyNote(key string) string {
	if key == "" {
		return ""
	}
	return " key=***"
}

// formatKeyless formats a value that holds a key by its descriptions
// without it: gs for %#v, s for every other verb (%d or %x would otherwise
// print the fields one by one).
func formatKeyless(f fmt.State, verb rune, s, gs string) {
	if verb == 'v' && f.Flag('#') {
		s = gs
	}
	redact.Format(f, verb, s)
}

// String describes the store without its key.
func (s StoreConfig) String() string {
	key := keyNote(s.Key)
	switch s.Kind {
	case StoreCosmos:
		out := fmt.Sprintf("cosmos endpoint=%s%s", s.Endpoint, key)
		for _, a := range s.Accounts {
			out += ", " + a.String()
		}
		return out
	default:
		if s.Path == "" {
			return "embedded (in memory)"
		}
		return "embedded path=" + s.Path
	}
}

// GoString keeps the key out of %#v.
func (s StoreConfig) GoString() string { return "config.StoreConfig{" + s.String() + "}" }

// Format keeps the key out of every verb (%d or %x would otherwise print
// the fields one by one): %#v writes GoString, the others String.
func (s StoreConfig) Format(f fmt.State, verb rune) { formatKeyless(f, verb, s.String(), s.GoString()) }

// Database is one database and its resolver.
type Database struct {
	// Link is the database link "dbs/{db}".
	Link string
	// Resolver routes the database's documents.
	Resolver resolver.Resolver
	// Definition is the resolver's JSON form as written in the file
	// (converted to JSON when the file is YAML or TOML).
	Definition json.RawMessage
}

// Load reads a configuration file (YAML, JSON or TOML, by extension: .yaml,
// .yml, .json, .toml) and applies DOCSHARD_ environment overrides. It
// decodes every database's resolver. Errors name the file and the field.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	format, err := formatOf(path)
	if err != nil {
		return nil, err
	}
	cfg, err := Parse(data, format)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	cfg.File = path
	cfg.Store.Path = resolvePath(path, cfg.Store.Path)
	return cfg, nil
}

// resolvePath makes a store path written in the file at path relative to
// that file's directory, so a command run from anywhere finds the same
// store. A path from the environment (DOCSHARD_STORE_PATH) is taken as it
// is, relative to the working directory like any command-line value.
func resolvePath(file, storePath string) string {
	if storePath == "" || filepath.IsAbs(storePath) || os.Getenv(EnvPrefix+"_STORE_PATH") != "" {
		return storePath
	}
	return filepath.Join(filepath.Dir(file), storePath)
}

// Parse reads a configuration from data in the given format ("yaml",
// "json" or "toml") and applies DOCSHARD_ environment overrides.
func Parse(data []byte, format string) (*Config, error) {
	// viper reads the store settings and applies the environment
	// overrides. It folds every key to lower case, which would corrupt
	// resolver definitions (lookup entries are case-sensitive values, and
	// field names are camelCase), so the databases section is decoded from
	// the same bytes by the format's own decoder instead.
	v := viper.New()
	v.SetConfigType(format)
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	v.SetDefault("store.kind", StoreEmbedded)
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("%w: malformed %s: %v", ErrInvalid, format, err)
	}
	if v.InConfig("store.key") {
		return nil, fmt.Errorf("%w: store.key must not be written in the file; set %s_STORE_KEY in the environment", ErrInvalid, EnvPrefix)
	}
	cfg := &Config{Store: StoreConfig{
		Kind:     v.GetString("store.kind"),
		Path:     v.GetString("store.path"),
		Endpoint: v.GetString("store.endpoint"),
		Key:      os.Getenv(EnvPrefix + "_STORE_KEY"),
	}}
	for _, k := range v.AllKeys() {
		if strings.HasPrefix(k, "store.") {
			switch {
			case k == "store.kind", k == "store.path", k == "store.endpoint":
			case k == "store.accounts", strings.HasPrefix(k, "store.accounts."): // decodeAccounts checks it
			default:
				return nil, fmt.Errorf("%w: unknown setting %s (store takes kind, path, endpoint, accounts)", ErrInvalid, k)
			}
		}
	}
	switch cfg.Store.Kind {
	case StoreEmbedded:
	case StoreCosmos:
		if cfg.Store.Endpoint == "" {
			return nil, fmt.Errorf("%w: store.endpoint is required when store.kind is cosmos", ErrInvalid)
		}
	default:
		return nil, fmt.Errorf("%w: store.kind = %q: want %s or %s", ErrInvalid, cfg.Store.Kind, StoreEmbedded, StoreCosmos)
	}
	doc, err := decodeFile(data, format)
	if err != nil {
		return nil, err
	}
	if cfg.Store.Accounts, err = decodeAccounts(doc); err != nil {
		return nil, err
	}
	if len(cfg.Store.Accounts) > 0 && cfg.Store.Kind != StoreCosmos {
		return nil, fmt.Errorf("%w: store.accounts binds Cosmos DB accounts: it needs store.kind cosmos", ErrInvalid)
	}
	if cfg.Databases, err = decodeDatabases(doc); err != nil {
		return nil, err
	}
	return cfg, nil
}

// decodeAccounts reads store.accounts from the file's own decoding (the
// case of keyEnv kept) and each account's key from its keyEnv.
func decodeAccounts(doc map[string]any) ([]Account, error) {
	st, _ := doc["store"].(map[string]any)
	list, err := objects(st["accounts"], "store.accounts", "bind, endpoint and keyEnv")
	if err != nil {
		return nil, err
	}
	out := make([]Account, 0, len(list))
	seen := map[string]int{}
	for i, m := range list {
		var a Account
		for k, v := range m {
			sv, isString := v.(string)
			if !isString {
				return nil, fmt.Errorf("%w: store.accounts[%d].%s = %v: want a string", ErrInvalid, i, k, v)
			}
			switch k {
			case "bind":
				a.Bind = sv
			case "endpoint":
				a.Endpoint = sv
			case "keyEnv":
				a.KeyEnv = sv
			case "key":
				return nil, fmt.Errorf("%w: store.accounts[%d].key must not be written in the file; name the environment variable that holds it with keyEnv", ErrInvalid, i)
			default:
				return nil, fmt.Errorf("%w: store.accounts[%d].%s: unknown field (an account has bind, endpoint and keyEnv)", ErrInvalid, i, k)
			}
		}
		bind := strings.Trim(a.Bind, "/")
		if _, err := link.ParseCollection(bind); err != nil {
			if _, err := link.ParseDatabase(bind); err != nil {
				return nil, fmt.Errorf("%w: store.accounts[%d].bind = %q: want a database link dbs/{db} or a collection link dbs/{db}/colls/{coll}", ErrInvalid, i, a.Bind)
			}
		}
		if j, dup := seen[bind]; dup {
			return nil, fmt.Errorf("%w: store.accounts[%d].bind %q repeats store.accounts[%d]", ErrInvalid, i, a.Bind, j)
		}
		seen[bind] = i
		if a.Endpoint == "" {
			return nil, fmt.Errorf("%w: store.accounts[%d] (%s): endpoint is missing", ErrInvalid, i, a.Bind)
		}
		if a.KeyEnv != "" {
			a.Key = os.Getenv(a.KeyEnv)
		}
		out = append(out, a)
	}
	return out, nil
}

// Database returns the database with the given link; an empty link selects
// the only database of the file (an error when there are several).
func (c *Config) Database(dbLink string) (*Database, error) {
	if dbLink == "" {
		switch len(c.Databases) {
		case 0:
			return nil, fmt.Errorf("%w: the file lists no databases", ErrInvalid)
		case 1:
			return &c.Databases[0], nil
		default:
			links := make([]string, len(c.Databases))
			for i, d := range c.Databases {
				links[i] = d.Link
			}
			return nil, fmt.Errorf("%w: the file lists %d databases (%s); name one with --db", ErrInvalid, len(links), strings.Join(links, ", "))
		}
	}
	for i := range c.Databases {
		if link.Same(c.Databases[i].Link, dbLink) {
			return &c.Databases[i], nil
		}
	}
	return nil, fmt.Errorf("%w: no database %q in the file", ErrInvalid, dbLink)
}

func formatOf(path string) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return "yaml", nil
	case ".json":
		return "json", nil
	case ".toml":
		return "toml", nil
	}
	return "", fmt.Errorf("config %s: %w: unknown file type %q (want .yaml, .yml, .json or .toml)", path, ErrInvalid, filepath.Ext(path))
}

// decodeFile decodes the file with the format's own decoder, keeping the
// case of every key (viper folds them), and checks its top-level settings.
func decodeFile(data []byte, format string) (map[string]any, error) {
	var doc map[string]any
	var err error
	switch format {
	case "yaml":
		err = yaml.Unmarshal(data, &doc)
	case "toml":
		err = toml.Unmarshal(data, &doc)
	case "json":
		err = json.Unmarshal(data, &doc)
	default:
		return nil, fmt.Errorf("%w: unknown format %q", ErrInvalid, format)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: malformed %s: %v", ErrInvalid, format, err)
	}
	for k := range doc {
		if k != "store" && k != "databases" {
			return nil, fmt.Errorf("%w: unknown setting %s (the file holds store and databases)", ErrInvalid, k)
		}
	}
	return doc, nil
}

// objects returns a list setting of the file's own decoding as its
// objects (none when it is absent), or an error naming the setting and
// the fields its objects have.
func objects(raw any, setting, fields string) ([]map[string]any, error) {
	if raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s must be a list of objects with %s", ErrInvalid, setting, fields)
	}
	out := make([]map[string]any, len(list))
	for i, item := range list {
		if out[i], ok = item.(map[string]any); !ok {
			return nil, fmt.Errorf("%w: %s[%d] must be an object with %s", ErrInvalid, setting, i, fields)
		}
	}
	return out, nil
}

// decodeDatabases decodes the databases section of the file's own
// decoding.
func decodeDatabases(doc map[string]any) ([]Database, error) {
	list, err := objects(doc["databases"], "databases", "link and resolver")
	if err != nil {
		return nil, err
	}
	out := make([]Database, 0, len(list))
	seen := map[string]int{}
	for i, m := range list {
		for k := range m {
			if k != "link" && k != "resolver" {
				return nil, fmt.Errorf("%w: databases[%d].%s: unknown field (a database has link and resolver)", ErrInvalid, i, k)
			}
		}
		dbLink, _ := m["link"].(string)
		if _, err := link.ParseDatabase(dbLink); err != nil {
			return nil, fmt.Errorf("%w: databases[%d].link = %v: want dbs/{db}", ErrInvalid, i, m["link"])
		}
		if j, dup := seen[strings.Trim(dbLink, "/")]; dup {
			return nil, fmt.Errorf("%w: databases[%d].link %q repeats databases[%d]", ErrInvalid, i, dbLink, j)
		}
		seen[strings.Trim(dbLink, "/")] = i
		def, ok := m["resolver"]
		if !ok {
			return nil, fmt.Errorf("%w: databases[%d] (%s): resolver is missing", ErrInvalid, i, dbLink)
		}
		js, err := json.Marshal(def)
		if err != nil {
			return nil, fmt.Errorf("%w: databases[%d].resolver: %v", ErrInvalid, i, err)
		}
		r, err := resolver.Unmarshal(js)
		if err != nil {
			return nil, fmt.Errorf("%w: databases[%d] (%s): %w", ErrInvalid, i, dbLink, resolver.InField("resolver", err))
		}
		if kd, ok := r.(resolver.KeyDefiner); ok && kd.KeyDef().IsZero() {
			return nil, fmt.Errorf("%w: databases[%d] (%s): resolver.partitionKey is missing: the router reads each document's key at this path (for example partitionKey: /userId)", ErrInvalid, i, dbLink)
		}
		out = append(out, Database{Link: dbLink, Resolver: r, Definition: js})
	}
	return out, nil
}
