package frames

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// track is an MP4 file's first video track: its coding and where its
// samples (frames, in decoding order) lie in the file.
type track struct {
	codec         string // the sample entry's type: "avc1", "mp4v", "jpeg"…
	objectType    byte   // an mp4v entry's ES object type (0x6C: JPEG)
	width, height int
	offsets       []int64
	sizes         []int64
}

// maxSamples bounds the sample table a file may announce (an hour at 60
// frames a second is 216000).
const maxSamples = 1 << 20

type mp4box struct {
	kind string
	body []byte
}

// boxes splits b into its top-level boxes.
func boxes(b []byte) ([]mp4box, error) {
	var out []mp4box
	for len(b) > 0 {
		if len(b) < 8 {
			return nil, fmt.Errorf("a box header is cut short (%d bytes left)", len(b))
		}
		size := int64(binary.BigEndian.Uint32(b))
		kind := string(b[4:8])
		hdr := int64(8)
		switch size {
		case 0:
			size = int64(len(b))
		case 1:
			if len(b) < 16 {
				return nil, fmt.Errorf("box %q: 64-bit size cut short", kind)
			}
			size, hdr = int64(binary.BigEndian.Uint64(b[8:])), 16
		}
		if size < hdr || size > int64(len(b)) {
			return nil, fmt.Errorf("box %q of %d bytes does not fit the %d left", kind, size, len(b))
		}
		out = append(out, mp4box{kind, b[hdr:size]})
		b = b[size:]
	}
	return out, nil
}

func child(b []byte, kind string) ([]byte, bool) {
	list, err := boxes(b)
	if err != nil {
		return nil, false
	}
	for _, x := range list {
		if x.kind == kind {
			return x.body, true
		}
	}
	return nil, false
}

// path descends through nested boxes.
func path(b []byte, kinds ...string) ([]byte, bool) {
	for _, k := range kinds {
		var ok bool
		if b, ok = child(b, k); !ok {
			return nil, false
		}
	}
	return b, true
}

// videoTrack finds the first track whose handler is "vide".
func videoTrack(file []byte) (*track, error) {
	top, err := boxes(file)
	if err != nil {
		return nil, fmt.Errorf("not an MP4 file: %w", err)
	}
	var moov []byte
	for _, x := range top {
		if x.kind == "moov" {
			moov = x.body
		}
	}
	if moov == nil {
		return nil, errors.New("not an MP4 file: no moov box")
	}
	traks, err := boxes(moov)
	if err != nil {
		return nil, fmt.Errorf("moov: %w", err)
	}
	for _, t := range traks {
		if t.kind != "trak" {
			continue
		}
		hdlr, ok := path(t.body, "mdia", "hdlr")
		if !ok || len(hdlr) < 12 || string(hdlr[8:12]) != "vide" {
			continue
		}
		stbl, ok := path(t.body, "mdia", "minf", "stbl")
		if !ok {
			return nil, errors.New("the video track has no sample table (stbl)")
		}
		return sampleTable(stbl)
	}
	return nil, errors.New("the MP4 file has no video track")
}

func sampleTable(stbl []byte) (*track, error) {
	tr := &track{}
	stsd, ok := child(stbl, "stsd")
	if !ok || len(stsd) < 8+8 {
		return nil, errors.New("no sample description (stsd)")
	}
	entries, err := boxes(stsd[8:])
	if err != nil || len(entries) == 0 {
		return nil, errors.New("the sample description holds no entry")
	}
	e := entries[0]
	tr.codec = e.kind
	// A visual sample entry: 6 reserved, data reference index, 16
	// pre-defined, width, height at byte 24, then 50 bytes to its boxes.
	if len(e.body) >= 78 {
		tr.width = int(binary.BigEndian.Uint16(e.body[24:]))
		tr.height = int(binary.BigEndian.Uint16(e.body[26:]))
		if esds, ok := child(e.body[78:], "esds"); ok {
			tr.objectType = esObjectType(esds)
		}
	}
	stsz, ok := child(stbl, "stsz")
	if !ok || len(stsz) < 12 {
		return nil, errors.New("no sample sizes (stsz)")
	}
	fixed, n := int64(binary.BigEndian.Uint32(stsz[4:])), int(binary.BigEndian.Uint32(stsz[8:]))
	if n > maxSamples {
		return nil, fmt.Errorf("%d samples, more than the %d read", n, maxSamples)
	}
	if fixed == 0 && len(stsz) < 12+4*n {
		return nil, fmt.Errorf("the sample size table is cut short (%d samples announced)", n)
	}
	tr.sizes = make([]int64, n)
	for i := range n {
		if fixed != 0 {
			tr.sizes[i] = fixed
		} else {
			tr.sizes[i] = int64(binary.BigEndian.Uint32(stsz[12+4*i:]))
		}
	}
	var chunks []int64
	if stco, ok := child(stbl, "stco"); ok && len(stco) >= 8 {
		c := int(binary.BigEndian.Uint32(stco[4:]))
		if c > maxSamples || len(stco) < 8+4*c {
			return nil, errors.New("the chunk offset table (stco) is cut short")
		}
		for i := range c {
			chunks = append(chunks, int64(binary.BigEndian.Uint32(stco[8+4*i:])))
		}
	} else if co64, ok := child(stbl, "co64"); ok && len(co64) >= 8 {
		c := int(binary.BigEndian.Uint32(co64[4:]))
		if c > maxSamples || len(co64) < 8+8*c {
			return nil, errors.New("the chunk offset table (co64) is cut short")
		}
		for i := range c {
			chunks = append(chunks, int64(binary.BigEndian.Uint64(co64[8+8*i:])))
		}
	} else {
		return nil, errors.New("no chunk offsets (stco or co64)")
	}
	stsc, ok := child(stbl, "stsc")
	if !ok || len(stsc) < 8 {
		return nil, errors.New("no sample-to-chunk table (stsc)")
	}
	runs := int(binary.BigEndian.Uint32(stsc[4:]))
	if runs > maxSamples || len(stsc) < 8+12*runs {
		return nil, errors.New("the sample-to-chunk table (stsc) is cut short")
	}
	sample := 0
	for r := 0; r < runs && sample < n; r++ {
		first := int(binary.BigEndian.Uint32(stsc[8+12*r:])) - 1
		per := int(binary.BigEndian.Uint32(stsc[12+12*r:]))
		last := len(chunks)
		if r+1 < runs {
			last = int(binary.BigEndian.Uint32(stsc[8+12*(r+1):])) - 1
		}
		if first < 0 || last > len(chunks) || first > last || per < 0 || per > maxSamples {
			return nil, fmt.Errorf("sample-to-chunk run %d names chunks %d-%d of %d", r, first+1, last, len(chunks))
		}
		for c := first; c < last && sample < n; c++ {
			off := chunks[c]
			for k := 0; k < per && sample < n; k++ {
				tr.offsets = append(tr.offsets, off)
				off += tr.sizes[sample]
				sample++
			}
		}
	}
	if sample != n {
		return nil, fmt.Errorf("the chunk tables place %d of %d samples", sample, n)
	}
	return tr, nil
}

// esObjectType reads the object type of an ES descriptor box (esds): the
// decoder config descriptor (tag 4) inside the ES descriptor (tag 3).
func esObjectType(esds []byte) byte {
	if len(esds) < 4 {
		return 0
	}
	b := esds[4:] // version and flags
	tag, body, ok := descriptor(b)
	if !ok || tag != 3 || len(body) < 3 {
		return 0
	}
	flags := body[2]
	body = body[3:]
	if flags&0x80 != 0 {
		if len(body) < 2 {
			return 0
		}
		body = body[2:]
	}
	if flags&0x40 != 0 {
		if len(body) < 1 || len(body) < 1+int(body[0]) {
			return 0
		}
		body = body[1+int(body[0]):]
	}
	if flags&0x20 != 0 {
		if len(body) < 2 {
			return 0
		}
		body = body[2:]
	}
	tag, dcd, ok := descriptor(body)
	if !ok || tag != 4 || len(dcd) < 1 {
		return 0
	}
	return dcd[0]
}

// descriptor reads one MPEG-4 descriptor: a tag and a length of up to
// four 7-bit bytes.
func descriptor(b []byte) (byte, []byte, bool) {
	if len(b) < 2 {
		return 0, nil, false
	}
	tag := b[0]
	n, i := 0, 1
	for ; i < len(b) && i <= 4; i++ {
		n = n<<7 | int(b[i]&0x7F)
		if b[i]&0x80 == 0 {
			i++
			break
		}
	}
	if n > len(b)-i {
		return 0, nil, false
	}
	return tag, b[i : i+n], true
}
