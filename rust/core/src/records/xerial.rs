//! Snappy as Kafka clients write it: Java wraps raw snappy blocks in snappy-java's "xerial"
//! stream framing, while librdkafka and others may send one raw block. Both decode here.

use crate::error::{Error, Result};

const MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// Magic, then version and minimum compatible version (both 1, as snappy-java writes).
const HEADER_LEN: usize = 16;
const VERSION: i32 = 1;
const COMPATIBLE_VERSION: i32 = 1;
/// snappy-java's default block size, so Java sees the chunking it would produce itself.
const BLOCK_LEN: usize = 32 * 1024;
/// The densest snappy element is a 3-byte copy of 64 bytes (~21x); a block claiming a
/// bigger expansion is corrupt, which we can tell before allocating its output.
const MAX_EXPANSION: usize = 22;

/// Decompress raw or xerial-framed snappy into at most `max_len` bytes.
pub(crate) fn decompress(input: &[u8], max_len: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    if input.starts_with(&MAGIC) {
        decompress_framed(input, max_len, &mut out)?;
    } else {
        decompress_block(input, max_len, &mut out)?;
    }
    Ok(out)
}

/// Xerial-frame `input` into 32 KiB raw snappy chunks.
pub(crate) fn compress(input: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(HEADER_LEN + input.len() / 2 + 64);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&COMPATIBLE_VERSION.to_be_bytes());
    let mut encoder = snap::raw::Encoder::new();
    for chunk in input.chunks(BLOCK_LEN) {
        let len_at = out.len();
        let data_at = len_at + 4;
        out.resize(data_at + snap::raw::max_compress_len(chunk.len()), 0);
        let written = encoder
            .compress(chunk, &mut out[data_at..])
            .map_err(|e| Error::Io(std::io::Error::other(e)))?;
        out.truncate(data_at + written);
        // A chunk of at most 32 KiB compresses to well under 4 GiB.
        out[len_at..data_at].copy_from_slice(&(written as u32).to_be_bytes());
    }
    Ok(out)
}

fn decompress_framed(input: &[u8], max_len: usize, out: &mut Vec<u8>) -> Result<()> {
    let mut rest = input;
    while !rest.is_empty() {
        // snappy-java accepts concatenated streams, each restarting with the header. A chunk
        // length cannot start with 0x82 (it would exceed 2 GiB), so this is unambiguous.
        if rest.starts_with(&MAGIC) {
            rest = rest
                .get(HEADER_LEN..)
                .ok_or_else(|| Error::corrupt("truncated xerial snappy header"))?;
            continue;
        }
        let (len, tail) = split_chunk_len(rest)?;
        if len > tail.len() {
            return Err(Error::corrupt(format!(
                "xerial snappy chunk of {len} bytes overruns the {} bytes left",
                tail.len()
            )));
        }
        let (chunk, tail) = tail.split_at(len);
        decompress_block(chunk, max_len, out)?;
        rest = tail;
    }
    Ok(())
}

/// Streaming form of `decompress`: one chunk (or the one raw block) at a time, so what is
/// held is a chunk's output, never the whole section. Chunks are bounded by the expansion
/// check and by what is left of `max_len`; past `max_len` it fails with `OverLimit`.
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
    framed: bool,
    max_len: usize,
    produced: usize,
    out: Vec<u8>,
    pos: usize,
}

/// The error a `Reader` gives once its output would pass its limit (wrapped in io::Error).
#[derive(Debug)]
pub(crate) struct OverLimit(pub usize);

impl std::fmt::Display for OverLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "data decompresses beyond the {} byte limit", self.0)
    }
}

impl std::error::Error for OverLimit {}

impl<'a> Reader<'a> {
    pub(crate) fn new(input: &'a [u8], max_len: usize) -> Reader<'a> {
        Reader {
            rest: input,
            framed: input.starts_with(&MAGIC),
            max_len,
            produced: 0,
            out: Vec::new(),
            pos: 0,
        }
    }

    /// Decode the next chunk into `out`; false at the end of the input.
    fn next_chunk(&mut self) -> Result<bool> {
        self.out.clear();
        self.pos = 0;
        let block = if self.framed {
            while self.rest.starts_with(&MAGIC) {
                self.rest = self
                    .rest
                    .get(HEADER_LEN..)
                    .ok_or_else(|| Error::corrupt("truncated xerial snappy header"))?;
            }
            if self.rest.is_empty() {
                return Ok(false);
            }
            let (len, tail) = split_chunk_len(self.rest)?;
            if len > tail.len() {
                return Err(Error::corrupt(format!(
                    "xerial snappy chunk of {len} bytes overruns the {} bytes left",
                    tail.len()
                )));
            }
            let (chunk, tail) = tail.split_at(len);
            self.rest = tail;
            chunk
        } else {
            if self.rest.is_empty() {
                return Ok(false);
            }
            std::mem::take(&mut self.rest)
        };
        let left = self.max_len - self.produced;
        let len = snap::raw::decompress_len(block).map_err(corrupt_snappy)?;
        if len > left {
            return Err(Error::Io(std::io::Error::other(OverLimit(self.max_len))));
        }
        decompress_block(block, left, &mut self.out)?;
        self.produced += self.out.len();
        Ok(true)
    }
}

impl std::io::Read for Reader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.out.len() {
            match self.next_chunk() {
                Ok(true) => {}
                Ok(false) => return Ok(0),
                Err(Error::Io(e)) => return Err(e),
                Err(e) => return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
            }
        }
        let n = buf.len().min(self.out.len() - self.pos);
        buf[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn split_chunk_len(rest: &[u8]) -> Result<(usize, &[u8])> {
    let Some((len, tail)) = rest.split_first_chunk::<4>() else {
        return Err(Error::corrupt("truncated xerial snappy chunk length"));
    };
    Ok((u32::from_be_bytes(*len) as usize, tail))
}

/// Append one raw snappy block to `out`, keeping `out` within `max_len`.
fn decompress_block(block: &[u8], max_len: usize, out: &mut Vec<u8>) -> Result<()> {
    let len = snap::raw::decompress_len(block).map_err(corrupt_snappy)?;
    if len > max_len.saturating_sub(out.len()) {
        return Err(Error::corrupt(format!(
            "snappy data decompresses beyond the {max_len} byte limit"
        )));
    }
    if len > block.len().saturating_mul(MAX_EXPANSION) {
        return Err(Error::corrupt(format!(
            "snappy block of {} bytes claims {len} bytes uncompressed",
            block.len()
        )));
    }
    let start = out.len();
    out.resize(start + len, 0);
    let written = snap::raw::Decoder::new()
        .decompress(block, &mut out[start..])
        .map_err(corrupt_snappy)?;
    out.truncate(start + written);
    Ok(())
}

fn corrupt_snappy(e: snap::Error) -> Error {
    Error::corrupt(format!("invalid snappy data: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Raw snappy block holding `text` as a single literal (length preamble, literal tag).
    fn literal_block(text: &[u8]) -> Vec<u8> {
        assert!(!text.is_empty() && text.len() <= 60);
        let mut block = vec![text.len() as u8, ((text.len() - 1) << 2) as u8];
        block.extend_from_slice(text);
        block
    }

    fn xerial_header() -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1]);
        out
    }

    fn push_chunk(out: &mut Vec<u8>, block: &[u8]) {
        out.extend_from_slice(&(block.len() as u32).to_be_bytes());
        out.extend_from_slice(block);
    }

    #[test]
    fn decodes_hand_built_xerial_stream() {
        // Exactly what snappy-java's SnappyOutputStream emits for two flushed chunks.
        let mut framed = xerial_header();
        push_chunk(&mut framed, &literal_block(b"hello "));
        push_chunk(&mut framed, &literal_block(b"world"));
        assert_eq!(decompress(&framed, 1 << 20).unwrap(), b"hello world");
        // Concatenated streams restart with a header.
        framed.extend_from_slice(&xerial_header());
        push_chunk(&mut framed, &literal_block(b"!"));
        assert_eq!(decompress(&framed, 1 << 20).unwrap(), b"hello world!");
    }

    #[test]
    fn decodes_raw_block() {
        assert_eq!(decompress(&literal_block(b"raw"), 1 << 20).unwrap(), b"raw");
        // The raw block sarama writes for its test record (from sarama's record_test.go).
        let sarama = [
            21, 80, 40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12,
        ];
        let out = decompress(&sarama, 1 << 20).unwrap();
        assert_eq!(out, &sarama[2..]);
    }

    #[test]
    fn compress_writes_xerial_framing() {
        let input: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let framed = compress(&input).unwrap();
        assert_eq!(framed[..HEADER_LEN], xerial_header()[..]);
        // 100 000 bytes in 32 KiB chunks: four chunks.
        let mut rest = &framed[HEADER_LEN..];
        let mut chunks = 0;
        while !rest.is_empty() {
            let (len, tail) = split_chunk_len(rest).unwrap();
            rest = &tail[len..];
            chunks += 1;
        }
        assert_eq!(chunks, 4);
        assert_eq!(decompress(&framed, input.len()).unwrap(), input);
        assert_eq!(decompress(&compress(b"").unwrap(), 0).unwrap(), b"");
    }

    #[test]
    fn malformed_framing_is_error() {
        let mut framed = xerial_header();
        push_chunk(&mut framed, &literal_block(b"hello"));
        for cut in 1..framed.len() {
            let partial = &framed[..cut];
            // Cutting exactly after the header leaves a valid empty stream.
            if cut == HEADER_LEN {
                assert_eq!(decompress(partial, 100).unwrap(), b"");
            } else {
                assert!(decompress(partial, 100).is_err(), "cut at {cut}");
            }
        }
        let mut huge = xerial_header();
        huge.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(decompress(&huge, 100).is_err());
    }

    #[test]
    fn respects_max_len_and_expansion_bound() {
        let block = literal_block(b"hello");
        assert!(decompress(&block, 4).is_err());
        assert_eq!(decompress(&block, 5).unwrap(), b"hello");
        // A 6-byte block claiming 2^31 bytes is refused before any allocation.
        let liar = [0x80, 0x80, 0x80, 0x80, 0x08, 0x00];
        assert!(decompress(&liar, usize::MAX).is_err());
    }
}
