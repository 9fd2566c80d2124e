use std::io::{Read, Write};

use crate::error::{Error, Result};
use crate::records::xerial;

/// Bits 0-2 of the batch attributes.
pub const COMPRESSION_MASK: i16 = 0x07;

/// Ceiling on a decompressed records section. Kafka itself has none; a ratio-based cap
/// (say 64x) would reject legitimate batches of highly repetitive values, which zstd and
/// gzip shrink by 1000x and more, so the bound is absolute: a bomb costs at most this.
pub const MAX_DECOMPRESSED_LEN: usize = 256 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Compression {
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// From the low three bits of the batch attributes.
    pub fn from_attributes(attributes: i16) -> Result<Compression> {
        match attributes & COMPRESSION_MASK {
            0 => Ok(Compression::None),
            1 => Ok(Compression::Gzip),
            2 => Ok(Compression::Snappy),
            3 => Ok(Compression::Lz4),
            4 => Ok(Compression::Zstd),
            other => Err(Error::UnsupportedCompression(other)),
        }
    }

    /// Parse "none", "gzip", "snappy", "lz4", "zstd".
    pub fn from_name(name: &str) -> Result<Compression> {
        Compression::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| Error::InvalidConfig {
                key: "compression.type".into(),
                value: name.into(),
                reason: "expected one of none, gzip, snappy, lz4, zstd".into(),
            })
    }

    /// The attribute bits (0-2) that mark a batch compressed with this codec.
    #[must_use]
    pub fn attribute_bits(self) -> i16 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// The codec's name as Kafka's `compression.type` spells it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

/// Decompress a batch's records section. Output is capped at `max_len` bytes
/// (`Error::CorruptRecord` beyond it) so a compression bomb cannot exhaust memory.
/// Snappy accepts both raw snappy and the xerial framing Java clients write.
pub fn decompress(codec: Compression, input: &[u8], max_len: usize) -> Result<Vec<u8>> {
    // Every codec frames even empty input in a few bytes; some readers would still call
    // nothing a valid empty stream.
    if input.is_empty() && codec != Compression::None {
        return Err(Error::corrupt(format!("empty {} data", codec.name())));
    }
    match codec {
        Compression::None => {
            check_len(input.len(), max_len)?;
            Ok(input.to_vec())
        }
        // Java's GZIPInputStream reads concatenated members, so we do too.
        Compression::Gzip => read_capped(flate2::read::MultiGzDecoder::new(input), input, max_len),
        Compression::Snappy => xerial::decompress(input, max_len),
        Compression::Lz4 => read_capped(lz4_flex::frame::FrameDecoder::new(input), input, max_len),
        Compression::Zstd => {
            let decoder = zstd::stream::read::Decoder::with_buffer(input).map_err(corrupt_io)?;
            read_capped(decoder, input, max_len)
        }
    }
}

/// A streaming decoder of `codec`'s framing over `input`, for walking records without
/// holding the decompressed section: the caller counts what it reads against `max_len`.
/// `max_len` also bounds what the decoder itself may allocate: zstd's window (a frame may
/// ask for up to 128 MiB however short its data is) and a snappy chunk.
pub(crate) fn decoder<'a>(
    codec: Compression,
    input: &'a [u8],
    max_len: usize,
) -> Result<Box<dyn Read + 'a>> {
    if input.is_empty() && codec != Compression::None {
        return Err(Error::corrupt(format!("empty {} data", codec.name())));
    }
    Ok(match codec {
        Compression::None => Box::new(input),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(input)),
        Compression::Snappy => Box::new(xerial::Reader::new(input, max_len)),
        Compression::Lz4 => Box::new(lz4_flex::frame::FrameDecoder::new(input)),
        Compression::Zstd => {
            let mut decoder =
                zstd::stream::read::Decoder::with_buffer(input).map_err(corrupt_io)?;
            decoder
                .window_log_max(zstd_window_log_max(max_len))
                .map_err(corrupt_io)?;
            Box::new(decoder)
        }
    })
}

/// The largest zstd window (log2) to grant under a `max_len` output cap: a window past the
/// cap only costs memory. At least 23 (8 MiB), what a streaming compressor picks up to
/// level 19 without knowing the data's size, so a small cap never refuses such frames; at
/// most 27, zstd's own limit without long-distance mode.
fn zstd_window_log_max(max_len: usize) -> u32 {
    let bits = usize::BITS - max_len.saturating_sub(1).leading_zeros();
    bits.clamp(23, 27)
}

/// Compress in the framing Kafka's Java client writes (xerial for snappy, LZ4 frame).
pub fn compress(codec: Compression, input: &[u8]) -> Result<Vec<u8>> {
    match codec {
        Compression::None => Ok(input.to_vec()),
        Compression::Gzip => {
            let sink = Vec::with_capacity(input.len() / 2 + 64);
            let mut encoder = flate2::write::GzEncoder::new(sink, flate2::Compression::default());
            encoder.write_all(input)?;
            Ok(encoder.finish()?)
        }
        Compression::Snappy => xerial::compress(input),
        Compression::Lz4 => compress_lz4(input),
        // Level 0 means zstd's default (3), which is also the Java client's default.
        Compression::Zstd => Ok(zstd::bulk::compress(input, 0)?),
    }
}

/// Java's KafkaLZ4BlockInputStream insists on independent blocks of 64 KiB to 4 MiB; the
/// 64 KiB independent blocks it writes itself are the safe choice.
fn compress_lz4(input: &[u8]) -> Result<Vec<u8>> {
    let info = lz4_flex::frame::FrameInfo::new()
        .block_size(lz4_flex::frame::BlockSize::Max64KB)
        .block_mode(lz4_flex::frame::BlockMode::Independent);
    let sink = Vec::with_capacity(input.len() / 2 + 64);
    let mut encoder = lz4_flex::frame::FrameEncoder::with_frame_info(info, sink);
    encoder.write_all(input)?;
    encoder.finish().map_err(|e| Error::Io(e.into()))
}

/// Drain a decompressing reader, failing as soon as it yields more than `max_len` bytes.
fn read_capped(reader: impl Read, input: &[u8], max_len: usize) -> Result<Vec<u8>> {
    // Guess a typical ratio for the first allocation; growth past it is paid for by real
    // output, never by a header's claim.
    let mut out = Vec::with_capacity(input.len().saturating_mul(4).min(max_len));
    let limit = u64::try_from(max_len).unwrap_or(u64::MAX).saturating_add(1);
    reader
        .take(limit)
        .read_to_end(&mut out)
        .map_err(corrupt_io)?;
    check_len(out.len(), max_len)?;
    Ok(out)
}

fn check_len(len: usize, max_len: usize) -> Result<()> {
    if len > max_len {
        return Err(Error::corrupt(format!(
            "records decompress beyond the {max_len} byte limit"
        )));
    }
    Ok(())
}

fn corrupt_io(e: std::io::Error) -> Error {
    Error::corrupt(format!("invalid compressed data: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(len: usize) -> Vec<u8> {
        // Compressible but not trivially so.
        (0..len)
            .map(|i| (i * 7 % 61) as u8 ^ (i / 1000) as u8)
            .collect()
    }

    #[test]
    fn names_and_bits_roundtrip() {
        for codec in Compression::ALL {
            assert_eq!(Compression::from_name(codec.name()).unwrap(), codec);
            assert_eq!(
                Compression::from_attributes(codec.attribute_bits()).unwrap(),
                codec
            );
            // Higher attribute bits do not disturb the codec.
            let attrs = codec.attribute_bits() | 0x78;
            assert_eq!(Compression::from_attributes(attrs).unwrap(), codec);
        }
        assert_eq!(Compression::from_name("ZSTD").unwrap(), Compression::Zstd);
        assert!(matches!(
            Compression::from_name("brotli"),
            Err(Error::InvalidConfig { .. })
        ));
        for bits in 5..=7 {
            assert!(matches!(
                Compression::from_attributes(bits),
                Err(Error::UnsupportedCompression(b)) if b == bits
            ));
        }
    }

    #[test]
    fn roundtrip_every_codec() {
        for len in [0, 1, 100, 70_000, 300_000] {
            let input = sample(len);
            for codec in Compression::ALL {
                let packed = compress(codec, &input).unwrap();
                let unpacked = decompress(codec, &packed, len).unwrap();
                assert_eq!(unpacked, input, "{codec:?} len {len}");
            }
        }
    }

    #[test]
    fn max_len_enforced_for_every_codec() {
        let input = sample(10_000);
        for codec in Compression::ALL {
            let packed = compress(codec, &input).unwrap();
            let err = decompress(codec, &packed, 9_999).unwrap_err();
            assert!(matches!(err, Error::CorruptRecord(_)), "{codec:?}: {err}");
        }
    }

    #[test]
    fn lz4_output_is_a_java_compatible_frame() {
        let packed = compress(Compression::Lz4, &sample(200_000)).unwrap();
        assert_eq!(packed[..4], [0x04, 0x22, 0x4d, 0x18]);
        let flg = packed[4];
        assert_eq!(flg >> 6, 0b01, "frame version");
        assert_ne!(flg & 0x20, 0, "independent blocks");
        assert_eq!(flg & 0x08, 0, "no content size");
        assert_eq!(packed[5], 0x40, "64 KiB blocks");
    }

    #[test]
    fn decodes_foreign_lz4_frame() {
        // The frame sarama (pierrec/lz4) writes for its test record: an uncompressed block
        // plus content checksum.
        let frame = [
            4, 34, 77, 24, 100, 112, 185, 21, 0, 0, 128, 40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7,
            2, 6, 8, 9, 10, 4, 11, 12, 0, 0, 0, 0, 12, 59, 239, 146,
        ];
        let out = decompress(Compression::Lz4, &frame, 1024).unwrap();
        assert_eq!(out, frame[11..32]);
    }

    #[test]
    fn zstd_bomb_is_refused() {
        // 64 MiB of zeros compresses to a few KiB; a 1 MiB cap must stop it early.
        let bomb = zstd::bulk::compress(&vec![0u8; 64 << 20], 19).unwrap();
        assert!(bomb.len() < 64 << 10);
        let err = decompress(Compression::Zstd, &bomb, 1 << 20).unwrap_err();
        assert!(matches!(err, Error::CorruptRecord(_)), "{err}");
    }

    #[test]
    fn gzip_bomb_is_refused() {
        let bomb = compress(Compression::Gzip, &vec![0u8; 16 << 20]).unwrap();
        assert!(decompress(Compression::Gzip, &bomb, 1 << 20).is_err());
    }

    #[test]
    fn gzip_reads_concatenated_members() {
        let mut two = compress(Compression::Gzip, b"hello ").unwrap();
        two.extend(compress(Compression::Gzip, b"world").unwrap());
        assert_eq!(
            decompress(Compression::Gzip, &two, 100).unwrap(),
            b"hello world"
        );
    }

    #[test]
    fn garbage_is_corrupt_for_every_codec() {
        let garbage = b"definitely not compressed data, not even close";
        for codec in Compression::ALL.into_iter().skip(1) {
            let err = decompress(codec, garbage, 1 << 20).unwrap_err();
            assert!(matches!(err, Error::CorruptRecord(_)), "{codec:?}: {err}");
            assert!(decompress(codec, &[], 1 << 20).is_err(), "{codec:?} empty");
        }
    }
}
