package safetensors

import "unsafe"

// asF32 views n little-endian float32 values in b (amd64 and arm64 are
// little-endian and tolerate unaligned loads). b is never written.
func asF32(b []byte, n int) []float32 {
	if n == 0 {
		return []float32{}
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
}
