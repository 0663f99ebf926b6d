//go:build !linux

package testenv

func memoryTempBase() string { return "" }
