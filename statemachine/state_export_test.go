package statemachine

// LockFileExistence tells the external tests whether a crashed writer
// leaves the state lock held (the O_EXCL fallback).
const LockFileExistence = lockFileExistence
