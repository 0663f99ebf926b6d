// Package claudecode is des's Claude Code adapter: it decides Claude Code
// hook events with des, as the des-hook command hook does.
//
// Start with [New] and [Handler.Handle]: decode an event with
// [DecodeEvent] (or take the one the Agent SDK's hook callback gets), and
// Handle returns des's [Output], the JSON object Claude Code reads from a
// command hook. [Handler.Run] is the command hook itself: one event on
// stdin, the answer on stdout. [SettingsFor] is the block of
// .claude/settings.json that installs a command running it.
//
// For each event the Handler builds the des.Engine of the event's project
// (CLAUDE_PROJECT_DIR, else the event's cwd) and routes the event:
//
//   - PreToolUse of Agent and Task: Gate 1; of Skill: the phase guards; of
//     Write, Edit and MultiEdit: the write guard and des's protected files;
//     of Bash: writes to guarded documents, `git commit` (Gate 3) and the
//     branch guard; of NotebookEdit and MCP tools: des's protected files.
//   - PostToolUse: a guarded write landed; after Agent and Task, Gate 2's
//     failure told to the orchestrator; after Bash, NotebookEdit and MCP
//     tools (and PostToolUseFailure), the effect check: what the call
//     changed on disk, undone where it broke des's rules, and the test runs
//     des saw.
//   - SubagentStop: Gate 2 and the task graph's wave sync; SubagentStart
//     and UserPromptSubmit: the subagent registry; SessionStart: recorded.
//
// Other events and tools get no opinion, and build nothing. Where des is in
// charge (DES markers, a guarded document) an internal error denies with
// DES-INTERNAL; elsewhere it is logged and des has no opinion. A Handler
// answers within the hook's deadline (20 s for tool events, 50 s for
// SubagentStop; DES_HOOK_DEADLINE_MS), well inside the timeouts SettingsFor
// gives Claude Code.
//
// A program that decides many events (the warm decision server of
// examples/des-engine) keeps compiled policies between them with
// [WithCache], and passes each client's environment, working directory and
// process with [WithEnv], [WithEnviron], [WithWorkingDir] and
// [WithClientPID].
package claudecode
