package resolver

import (
	"errors"
	"fmt"

	"github.com/docshard/docshard/partitionkey"
)

// Path is one parsed partition-key path, such as "/userId", "/a/b" or
// `/"department name"` (partitionkey.Path). The zero Path has no segment.
type Path = partitionkey.Path

// ParsePath parses one Cosmos DB partition-key path with the grammar
// partitionkey.ParsePath documents. Errors are *ConfigError for the field
// "partitionKey" whose value is the path and whose reason gives the byte
// offset (from 0) of the problem. ParsePath costs one pass over s and an
// allocation per segment.
func ParsePath(s string) (Path, error) {
	p, err := partitionkey.ParsePath(s)
	var pe *partitionkey.PathError
	if errors.As(err, &pe) {
		return Path{}, &ConfigError{Field: "partitionKey", Value: s, Reason: fmt.Sprintf("at byte %d: %s", pe.Offset, pe.Reason)}
	}
	return p, err
}
