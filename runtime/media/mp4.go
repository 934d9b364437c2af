package media

import (
	"encoding/binary"
	"errors"
)

// MJPEGMP4 writes JPEG frames as an MP4 file (ISO/IEC 14496-12 and -14):
// one video track whose samples are the frames, coded as JPEG (MPEG-4
// object type 0x6C), at fps frames a second. Players and ffprobe read it
// as Motion JPEG.
func MJPEGMP4(frames [][]byte, width, height, fps int) ([]byte, error) {
	if len(frames) == 0 || width <= 0 || height <= 0 || width > 0xFFFF || height > 0xFFFF || fps <= 0 {
		return nil, errors.New("mp4: need frames, a size and a frame rate")
	}
	n := uint32(len(frames))
	ftyp := box("ftyp", []byte("isom"), u32(0x200), []byte("isomiso2mp41"))
	var data []byte
	maxSize := 0
	for _, f := range frames {
		data = append(data, f...)
		maxSize = max(maxSize, len(f))
	}
	mdatHeader := 8
	mdatOffset := uint32(len(ftyp) + mdatHeader)
	durMS := uint32(uint64(n) * 1000 / uint64(fps))
	matrix := cat(u32(0x00010000), u32(0), u32(0), u32(0), u32(0x00010000), u32(0), u32(0), u32(0), u32(0x40000000))

	mvhd := fullBox("mvhd", 0, 0, u32(0), u32(0), u32(1000), u32(durMS), u32(0x00010000), u16(0x0100), make([]byte, 10), matrix, make([]byte, 24), u32(2))
	tkhd := fullBox("tkhd", 0, 3, u32(0), u32(0), u32(1), u32(0), u32(durMS), make([]byte, 8), u16(0), u16(0), u16(0), u16(0), matrix,
		u32(uint32(width)<<16), u32(uint32(height)<<16))
	mdhd := fullBox("mdhd", 0, 0, u32(0), u32(0), u32(uint32(fps)), u32(n), u16(0x55C4), u16(0))
	hdlr := fullBox("hdlr", 0, 0, u32(0), []byte("vide"), make([]byte, 12), []byte("VideoHandler\x00"))
	vmhd := fullBox("vmhd", 0, 1, u16(0), make([]byte, 6))
	dinf := box("dinf", fullBox("dref", 0, 0, u32(1), fullBox("url ", 0, 1)))

	// An ES descriptor naming JPEG (object type 0x6C, visual stream).
	dcd := cat([]byte{0x6C, 0x11}, u24(uint32(maxSize)), u32(0), u32(0))
	es := cat(u16(1), []byte{0}, descriptor(0x04, dcd), descriptor(0x06, []byte{0x02}))
	esds := fullBox("esds", 0, 0, descriptor(0x03, es))
	compressor := make([]byte, 32)
	copy(compressor[1:], "Motion JPEG")
	compressor[0] = byte(len("Motion JPEG"))
	mp4v := box("mp4v", make([]byte, 6), u16(1), make([]byte, 16), u16(uint16(width)), u16(uint16(height)),
		u32(0x00480000), u32(0x00480000), u32(0), u16(1), compressor, u16(0x0018), u16(0xFFFF), esds)
	stsd := fullBox("stsd", 0, 0, u32(1), mp4v)
	stts := fullBox("stts", 0, 0, u32(1), u32(n), u32(1))
	stsc := fullBox("stsc", 0, 0, u32(1), u32(1), u32(n), u32(1))
	sizes := make([]byte, 0, 4*len(frames))
	for _, f := range frames {
		sizes = append(sizes, u32(uint32(len(f)))...)
	}
	stsz := fullBox("stsz", 0, 0, u32(0), u32(n), sizes)
	stco := fullBox("stco", 0, 0, u32(1), u32(mdatOffset))
	stbl := box("stbl", stsd, stts, stsc, stsz, stco)
	minf := box("minf", vmhd, dinf, stbl)
	mdia := box("mdia", mdhd, hdlr, minf)
	moov := box("moov", mvhd, box("trak", tkhd, mdia))

	out := make([]byte, 0, len(ftyp)+mdatHeader+len(data)+len(moov))
	out = append(out, ftyp...)
	out = append(out, u32(uint32(mdatHeader+len(data)))...)
	out = append(out, "mdat"...)
	out = append(out, data...)
	return append(out, moov...), nil
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func u16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
func u24(v uint32) []byte { return []byte{byte(v >> 16), byte(v >> 8), byte(v)} }
func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func box(kind string, parts ...[]byte) []byte {
	body := cat(parts...)
	return cat(u32(uint32(8+len(body))), []byte(kind), body)
}

func fullBox(kind string, version byte, flags uint32, parts ...[]byte) []byte {
	return box(kind, append([]byte{version}, u24(flags)...), cat(parts...))
}

// descriptor is an MPEG-4 descriptor with a 4-byte length.
func descriptor(tag byte, body []byte) []byte {
	n := len(body)
	return cat([]byte{tag, 0x80 | byte(n>>21&0x7F), 0x80 | byte(n>>14&0x7F), 0x80 | byte(n>>7&0x7F), byte(n & 0x7F)}, body)
}

// MP4Frames reads back the samples of the first track of an MP4 file
// (its stsz sizes and stco offsets, one sample a chunk or all in one):
// enough to check a file MJPEGMP4 wrote, or one shaped like it.
func MP4Frames(b []byte) ([][]byte, error) {
	moov, ok := findBox(b, "moov")
	if !ok {
		return nil, errors.New("mp4: no moov box")
	}
	stbl := moov
	for _, k := range []string{"trak", "mdia", "minf", "stbl"} {
		if stbl, ok = findBox(stbl, k); !ok {
			return nil, errors.New("mp4: no " + k + " box")
		}
	}
	stsz, ok1 := findBox(stbl, "stsz")
	stco, ok2 := findBox(stbl, "stco")
	if !ok1 || !ok2 || len(stsz) < 12 || len(stco) < 8 {
		return nil, errors.New("mp4: no sample table")
	}
	count := int(binary.BigEndian.Uint32(stsz[8:12]))
	if binary.BigEndian.Uint32(stsz[4:8]) != 0 || len(stsz) < 12+4*count || count <= 0 {
		return nil, errors.New("mp4: malformed stsz")
	}
	chunks := int(binary.BigEndian.Uint32(stco[4:8]))
	if chunks < 1 || len(stco) < 8+4*chunks {
		return nil, errors.New("mp4: malformed stco")
	}
	off := int(binary.BigEndian.Uint32(stco[8:12]))
	frames := make([][]byte, count)
	for i := range count {
		size := int(binary.BigEndian.Uint32(stsz[12+4*i:]))
		if chunks == count {
			off = int(binary.BigEndian.Uint32(stco[8+4*i:]))
		}
		if off < 0 || size < 0 || off > len(b) || size > len(b)-off {
			return nil, errors.New("mp4: a sample lies outside the file")
		}
		frames[i] = b[off : off+size]
		off += size
	}
	return frames, nil
}

// findBox returns the body of the first box of kind in b (a sequence of
// boxes); full boxes keep their version and flags.
func findBox(b []byte, kind string) ([]byte, bool) {
	for len(b) >= 8 {
		size := int(binary.BigEndian.Uint32(b[0:4]))
		if size < 8 || size > len(b) {
			return nil, false
		}
		if string(b[4:8]) == kind {
			return b[8:size], true
		}
		b = b[size:]
	}
	return nil, false
}
