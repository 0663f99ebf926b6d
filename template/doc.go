// Package template reads the DES markers of a subagent prompt and renders the
// prompts that carry them.
//
// A prompt opts into DES with HTML-comment markers: metadata
// (<!-- DES-VALIDATION: required -->, <!-- DES-ORIGIN: command:/nw:execute -->,
// <!-- DES-STEP-FILE: path -->) and sections (<!-- DES-SECTION: NAME -->).
// [Parse] reports what a prompt holds, conflicts and unknown markers included,
// without judging it: the policy decides. A prompt without markers is ad hoc.
//
// A [Set] renders prompts from Go text/templates: the four embedded defaults
// ([Defaults]) and a team's own ([Set.Add], [ParseFS]). Rendering neutralizes
// every string of the data first ([Neutralize]), so text from a step file or
// an agent configuration cannot forge a marker.
package template
