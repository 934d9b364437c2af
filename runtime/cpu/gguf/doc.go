// Package gguf reads and writes GGUF model files (versions 2 and 3): the
// header, every metadata value type, the tensor table and tensor data,
// validated so that a truncated or hostile file is an error, never a panic.
package gguf
