package emulator

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/docshard/docshard/internal/localquery"
	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// databaseExists reports whether a database exists: in the catalog, or in
// the store, where a database exists while it has collections. It returns
// the database's _ts (0 when only the store knows it).
func (s *Server) databaseExists(ctx context.Context, db string) (int64, bool, *apiError) {
	if ts, ok := s.catalog.get(db); ok {
		return ts, true, nil
	}
	colls, err := s.st.ListCollections(ctx, "dbs/"+db)
	if err != nil {
		return 0, false, fromStore(err)
	}
	return 0, len(colls) > 0, nil
}

func dbNotFound(db string) *apiError {
	e := errorf(http.StatusNotFound, "Resource Not Found: database %q does not exist", db)
	e.substatus = 1003
	return e
}

// databases answers /dbs: GET lists the databases of the catalog, POST
// creates one or, as a query, queries them.
func (s *Server) databases(c *call) *apiError {
	switch {
	case c.r.Method == http.MethodGet || c.r.Method == http.MethodPost && c.isQuery():
		var items [][]byte
		for _, d := range s.catalog.list() {
			items = append(items, databaseJSON(d.ID, d.TS))
		}
		return c.resourceFeed("", "Databases", items)
	case c.r.Method == http.MethodPost:
		var props struct {
			ID string `json:"id"`
		}
		if e := c.decode("database", &props); e != nil {
			return e
		}
		if _, err := link.ParseDatabase("dbs/" + props.ID); err != nil || len(props.ID) > 255 {
			return errorf(http.StatusBadRequest, "database id %q: want 1 to 255 characters, none of / \\ ? #", props.ID)
		}
		content, e := offerHeaders(c.r.Header)
		if e != nil {
			return e
		}
		s.admin.Lock()
		defer s.admin.Unlock()
		if _, ok, e := s.databaseExists(c.r.Context(), props.ID); e != nil {
			return e
		} else if ok {
			return errorf(http.StatusConflict, "%s database %q exists", msgConflict, props.ID)
		}
		ts := s.now().Unix()
		err := s.catalog.change(func(dbs map[string]int64, offers map[string]offerRecord) {
			dbs[props.ID] = ts
			delete(offers, "dbs/"+props.ID)
			if content != nil {
				offers["dbs/"+props.ID] = offerRecord{Link: "dbs/" + props.ID, Content: content, TS: ts}
			}
		})
		if err != nil {
			s.logf("%v", err)
			return errorf(http.StatusServiceUnavailable, "recording the database: %v", err)
		}
		c.json(http.StatusCreated, databaseJSON(props.ID, ts), 1)
		return nil
	}
	return c.badMethod()
}

// database answers /dbs/{db}: GET reads it (with docshard's fencing
// headers, see HeaderFence), DELETE deletes it with every collection in it.
func (s *Server) database(c *call, db string) *apiError {
	ctx := c.r.Context()
	switch c.r.Method {
	case http.MethodGet:
		if e := s.fence(c, db); e != nil {
			return e
		}
		ts, ok, e := s.databaseExists(ctx, db)
		if e != nil {
			return e
		}
		if !ok {
			return dbNotFound(db)
		}
		c.json(http.StatusOK, databaseJSON(db, ts), 1)
		return nil
	case http.MethodDelete:
		s.admin.Lock()
		defer s.admin.Unlock()
		_, ok, e := s.databaseExists(ctx, db)
		if e != nil {
			return e
		}
		if !ok {
			return dbNotFound(db)
		}
		colls, err := s.st.ListCollections(ctx, "dbs/"+db)
		if err != nil {
			return fromStore(err)
		}
		for _, l := range colls {
			s.paths.Delete(l)
			if err := s.st.DeleteCollection(ctx, l); err != nil {
				return fromStore(err)
			}
		}
		if err := s.catalog.set(db, -1); err != nil {
			s.logf("%v", err)
			return errorf(http.StatusServiceUnavailable, "recording the database's deletion: %v", err)
		}
		c.empty(http.StatusNoContent, 1)
		return nil
	}
	return c.badMethod()
}

// resourceFeed answers a list or query of databases or collections: the
// whole list, or the query's results over it, in one page.
func (c *call) resourceFeed(rid, key string, items [][]byte) *apiError {
	if c.r.Method == http.MethodPost {
		q, e := c.queryBody()
		if e != nil {
			return e
		}
		params, err := localquery.Params(q.Parameters)
		if err != nil {
			return errorf(http.StatusBadRequest, "%v", err)
		}
		prog, err := query.Prepare(q.Text, params)
		if err != nil {
			return errorf(http.StatusBadRequest, "%v", err)
		}
		docs := make([]query.Doc, 0, len(items))
		for _, it := range items {
			d, err := query.NewDoc(it)
			if err != nil {
				return errorf(http.StatusInternalServerError, "%v", err)
			}
			docs = append(docs, d)
		}
		out, err := prog.Execute(c.r.Context(), func(yield func(query.Doc) bool) {
			for _, d := range docs {
				if !yield(d) {
					return
				}
			}
		})
		if err != nil {
			return errorf(http.StatusBadRequest, "%v", err)
		}
		items = items[:0]
		for _, r := range out {
			items = append(items, r)
		}
	}
	c.w.Header().Set("x-ms-item-count", strconv.Itoa(len(items)))
	c.json(http.StatusOK, feedJSON(rid, key, items), 1)
	return nil
}

// queryBody reads a query request: {"query": ..., "parameters": [...]}.
// Parameter values are kept as their JSON text.
func (c *call) queryBody() (store.Query, *apiError) {
	var body struct {
		Query      *string `json:"query"`
		Parameters []struct {
			Name  string          `json:"name"`
			Value json.RawMessage `json:"value"`
		} `json:"parameters"`
	}
	if e := c.decode("query", &body); e != nil {
		return store.Query{}, e
	}
	if body.Query == nil {
		return store.Query{}, errorf(http.StatusBadRequest, `the query body has no "query"`)
	}
	q := store.Query{Text: *body.Query}
	for _, p := range body.Parameters {
		if p.Value == nil {
			return q, errorf(http.StatusBadRequest, "query parameter %q has no value", p.Name)
		}
		q.Parameters = append(q.Parameters, store.Param{Name: p.Name, Value: p.Value})
	}
	return q, nil
}
