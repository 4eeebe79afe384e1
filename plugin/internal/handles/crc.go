package handles

// crc32IEEE is the CRC-32 of hash/crc32's IEEE polynomial, written out
// because hash/crc32's tables and per-architecture code add about 10 KB
// to plugin.wasm for a checksum over a few kilobytes (index_test.go checks
// it against hash/crc32).
func crc32IEEE(b []byte) uint32 {
	crc := ^uint32(0)
	for _, c := range b {
		crc ^= uint32(c)
		for k := 0; k < 8; k++ {
			crc = crc>>1 ^ 0xedb88320&-(crc&1)
		}
	}
	return ^crc
}
