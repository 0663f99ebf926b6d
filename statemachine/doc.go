// Package statemachine holds the workflow documents DES guards and the state
// machines their statuses follow.
//
// The transition tables are not written in Go: their single source is the
// policy bundle's data (data.des.transitions), which [ParseTables] reads, so
// a Rego rule and a Go caller can never disagree on which move is allowed.
package statemachine
