// Package redact formats values that hold a secret (an account key) so
// that no fmt verb prints it: such a type implements fmt.Formatter (which
// fmt prefers to String and GoString for every verb, and which keeps %d or
// %x from printing its fields one by one) by calling Format with a
// description that leaves the secret out.
package redact

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Mask is what a description shows in place of a secret that is set.
const Mask = "***"

// Secret returns Mask when s is set, "" otherwise: what a description
// shows of it.
func Secret(s string) string {
	if s == "" {
		return ""
	}
	return Mask
}

// Format writes desc for verb: quoted for %q, as it is for every other
// verb (%v, %+v, %#v, %s, %d, %x ...). It costs one write.
func Format(f fmt.State, verb rune, desc string) {
	if verb == 'q' {
		desc = strconv.Quote(desc)
	}
	_, _ = f.Write([]byte(desc))
}

// Verbs are the fmt formats a test of a secret-holding type prints it
// with: every verb fmt knows, with the flags that change what %v shows.
var Verbs = []string{
	"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%t", "%b", "%o", "%O",
	"%c", "%U", "%e", "%E", "%f", "%F", "%g", "%G", "%08.3v", "%-20s", "%T",
}

// Leaks returns the first format of Verbs under which fmt prints v with
// one of secrets in it (as it is, or in hexadecimal), or "" when none
// does. It costs one Sprintf per verb.
func Leaks(v any, secrets ...string) string {
	for _, verb := range Verbs {
		out := fmt.Sprintf(verb, v)
		for _, s := range secrets {
			if s == "" {
				continue
			}
			if strings.Contains(out, s) || strings.Contains(strings.ToLower(out), hex.EncodeToString([]byte(s))) {
				return verb + ": " + out
			}
		}
	}
	return ""
}
