package store

import (
	"fmt"
	"strings"
)

// ValidateID checks a document id against Cosmos DB's rules: non-empty, at
// most MaxIDLength bytes, none of '/', '\\', '?', '#'. The error wraps
// ErrBadRequest and names the id.
func ValidateID(id string) error {
	switch {
	case id == "":
		return &Error{Kind: ErrBadRequest, Message: `document "id" is empty`}
	case len(id) > MaxIDLength:
		return &Error{Kind: ErrBadRequest, ID: id[:32] + "...", Message: fmt.Sprintf("document id is %d bytes, more than %d", len(id), MaxIDLength)}
	case strings.ContainsAny(id, `/\?#`):
		return &Error{Kind: ErrBadRequest, ID: id, Message: `document id contains one of / \ ? #`}
	}
	return nil
}
