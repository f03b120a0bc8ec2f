package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
)

// CatalogFile is the file in Options.Dir where the emulator keeps the
// databases created through it: the store has no database objects (a
// database exists there while it has collections), but Cosmos DB's do
// exist while empty.
const CatalogFile = "serve-databases.json"

// catalog is the set of databases created through the emulator, each with
// its creation time, kept in a file written atomically (a temporary file,
// fsync, rename, fsync of the directory), or in memory when path is empty.
type catalog struct {
	path   string
	mu     sync.Mutex
	dbs    map[string]int64       // id -> _ts
	offers map[string]offerRecord // resource link -> its throughput
}

type catalogFile struct {
	Version   int           `json:"version"`
	Databases []catalogItem `json:"databases"`
	// Offers are the throughput settings of databases and containers
	// created with one (see offers.go), sorted by link; absent in a file
	// written before offers were kept.
	Offers []offerRecord `json:"offers,omitempty"`
}

type catalogItem struct {
	ID string `json:"id"`
	TS int64  `json:"ts"`
}

// openCatalog reads dir's catalog, if any; an empty dir keeps it in memory.
func openCatalog(dir string) (*catalog, error) {
	c := &catalog{dbs: map[string]int64{}, offers: map[string]offerRecord{}}
	if dir == "" {
		return c, nil
	}
	c.path = filepath.Join(dir, CatalogFile)
	data, err := os.ReadFile(c.path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("emulator: %w", err)
	}
	var f catalogFile
	if err := json.Unmarshal(data, &f); err != nil || f.Version != 1 {
		return nil, fmt.Errorf("emulator: %s is not a catalog of databases (version 1): %v", c.path, err)
	}
	for _, d := range f.Databases {
		c.dbs[d.ID] = d.TS
	}
	for _, o := range f.Offers {
		c.offers[o.Link] = o
	}
	return c, nil
}

// get returns a database's creation time and whether it is in the catalog.
func (c *catalog) get(id string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ts, ok := c.dbs[id]
	return ts, ok
}

// list returns the catalog's databases sorted by id.
func (c *catalog) list() []catalogItem {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]catalogItem, 0, len(c.dbs))
	for id, ts := range c.dbs {
		out = append(out, catalogItem{ID: id, TS: ts})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// set adds (ts >= 0) or removes (ts < 0) a database and returns once the
// change is on disk; on failure the catalog is as it was. Removing a
// database removes the offers of it and its containers.
func (c *catalog) set(id string, ts int64) error {
	return c.change(func(dbs map[string]int64, offers map[string]offerRecord) {
		if ts >= 0 {
			dbs[id] = ts
			return
		}
		delete(dbs, id)
		for l := range offers {
			if l == "dbs/"+id || strings.HasPrefix(l, "dbs/"+id+"/") {
				delete(offers, l)
			}
		}
	})
}

// change applies fn to copies of the catalog's maps and returns once the
// result is on disk; on failure the catalog is as it was.
func (c *catalog) change(fn func(dbs map[string]int64, offers map[string]offerRecord)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	dbs, offers := maps.Clone(c.dbs), maps.Clone(c.offers)
	fn(dbs, offers)
	old, oldOffers := c.dbs, c.offers
	c.dbs, c.offers = dbs, offers
	if err := c.saveLocked(); err != nil {
		c.dbs, c.offers = old, oldOffers
		return err
	}
	return nil
}

// offer returns the offer of a resource link, if it has one.
func (c *catalog) offer(link string) (offerRecord, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.offers[link]
	return o, ok
}

// offerList returns every offer, sorted by link.
func (c *catalog) offerList() []offerRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedOffers(c.offers)
}

// sortedOffers returns the offers of m sorted by link.
func sortedOffers(m map[string]offerRecord) []offerRecord {
	out := slices.Collect(maps.Values(m))
	slices.SortFunc(out, func(a, b offerRecord) int { return strings.Compare(a.Link, b.Link) })
	return out
}

func (c *catalog) saveLocked() error {
	if c.path == "" {
		return nil
	}
	f := catalogFile{Version: 1, Databases: []catalogItem{}}
	for id, ts := range c.dbs {
		f.Databases = append(f.Databases, catalogItem{ID: id, TS: ts})
	}
	sort.Slice(f.Databases, func(i, j int) bool { return f.Databases[i].ID < f.Databases[j].ID })
	f.Offers = sortedOffers(c.offers)
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(c.path, append(data, '\n'))
}

// writeFileAtomic replaces path with data so that a crash leaves either the
// old file or the new one, never a part.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("emulator: writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("emulator: writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("emulator: writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("emulator: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("emulator: writing %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("emulator: syncing %s: %w", dir, err)
		}
	}
	return nil
}
