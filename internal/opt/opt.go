// Package opt holds the one rule every options struct of this module
// follows: a nil pointer means the defaults.
package opt

// Of returns *opts, or the zero value when opts is nil: what a nil options
// pointer stands for, since every options struct of this module means its
// defaults when nil. It copies the struct, so the caller's value cannot
// change under the operation.
func Of[T any](opts *T) T {
	if opts == nil {
		var zero T
		return zero
	}
	return *opts
}
