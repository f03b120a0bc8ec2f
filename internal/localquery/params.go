package localquery

import (
	"fmt"

	"github.com/docshard/docshard/query"
	"github.com/docshard/docshard/store"
)

// Params returns a query's parameters by name, as query.Compile takes
// them. Every name is '@' followed by at least one character and is given
// once; otherwise the error wraps query.ErrCompile and names the
// parameter. It costs one map of len(ps) entries.
func Params(ps []store.Param) (map[string]any, error) {
	m := make(map[string]any, len(ps))
	for _, p := range ps {
		if len(p.Name) < 2 || p.Name[0] != '@' {
			return nil, fmt.Errorf("%w: parameter name %q: want '@' and a name", query.ErrCompile, p.Name)
		}
		if _, dup := m[p.Name]; dup {
			return nil, fmt.Errorf("%w: parameter %s given twice", query.ErrCompile, p.Name)
		}
		m[p.Name] = p.Value
	}
	return m, nil
}
