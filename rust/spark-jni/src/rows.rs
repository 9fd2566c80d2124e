//! The chunk format the JVM writer fills: rows one after another, every integer a 32-bit
//! int in the machine's byte order (both sides run in one process), so the Java side
//! writes them with plain stores and nothing is swapped:
//!
//! ```text
//! row    := partition (-1: none) | key length (-1: null) | key | value length (-1: null)
//!           | value | header count | header*
//! header := key length | key | value length (-1: null) | value
//! ```
//!
//! The bytes come from a buffer Java code wrote, so every length is checked against what
//! is left before it is used: a malformed chunk is an error naming the row, never a read
//! past the end.

use kafkalite_core::records::HeaderRef;

/// One row, borrowing the chunk.
#[derive(Debug, PartialEq, Eq)]
pub struct Row<'a> {
    /// The row's own partition; `None` lets the partitioner choose.
    pub partition: Option<i32>,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
}

/// Rows of a chunk in order. Each row's headers are read into the `headers` vector the
/// caller passes, so no row allocates.
pub struct Rows<'a> {
    chunk: &'a [u8],
    at: usize,
    row: usize,
}

impl<'a> Rows<'a> {
    #[must_use]
    pub fn new(chunk: &'a [u8]) -> Rows<'a> {
        Rows {
            chunk,
            at: 0,
            row: 0,
        }
    }

    /// The next row (its headers replace `headers`' contents), `None` at the end.
    pub fn next_row(
        &mut self,
        headers: &mut Vec<HeaderRef<'a>>,
    ) -> Result<Option<Row<'a>>, String> {
        if self.at == self.chunk.len() {
            return Ok(None);
        }
        let partition = self.int("partition")?;
        if partition < -1 {
            return Err(self.bad(format!("partition {partition} is negative")));
        }
        let key = self.bytes("key")?;
        let value = self.bytes("value")?;
        let count = self.int("header count")?;
        if count < 0 {
            return Err(self.bad(format!("header count {count} is negative")));
        }
        headers.clear();
        for _ in 0..count {
            let key = self
                .bytes("header key")?
                .ok_or_else(|| self.bad("a header key is null".to_string()))?;
            let value = self.bytes("header value")?;
            headers.push(HeaderRef { key, value });
        }
        self.row += 1;
        Ok(Some(Row {
            partition: (partition >= 0).then_some(partition),
            key,
            value,
        }))
    }

    fn int(&mut self, what: &str) -> Result<i32, String> {
        let Some(bytes) = self.chunk.get(self.at..self.at + 4) else {
            return Err(self.bad(format!("the chunk ends inside the {what}")));
        };
        self.at += 4;
        Ok(i32::from_ne_bytes(bytes.try_into().expect("4 bytes")))
    }

    fn bytes(&mut self, what: &str) -> Result<Option<&'a [u8]>, String> {
        let len = self.int(what)?;
        if len == -1 {
            return Ok(None);
        }
        let left = self.chunk.len() - self.at;
        let Some(len) = usize::try_from(len).ok().filter(|&n| n <= left) else {
            return Err(self.bad(format!(
                "{what} length {len} (the chunk has {left} bytes left)"
            )));
        };
        let bytes = &self.chunk[self.at..self.at + len];
        self.at += len;
        Ok(Some(bytes))
    }

    fn bad(&self, message: String) -> String {
        format!("malformed row {} of the chunk: {message}", self.row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(out: &mut Vec<u8>, v: i32) {
        out.extend_from_slice(&v.to_ne_bytes());
    }

    fn bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
        match b {
            None => int(out, -1),
            Some(b) => {
                int(out, b.len() as i32);
                out.extend_from_slice(b);
            }
        }
    }

    #[test]
    fn reads_rows_with_nulls_partitions_and_headers() {
        let mut chunk = Vec::new();
        int(&mut chunk, -1);
        bytes(&mut chunk, Some(b"k"));
        bytes(&mut chunk, Some(b"v1"));
        int(&mut chunk, 0);
        int(&mut chunk, 3);
        bytes(&mut chunk, None);
        bytes(&mut chunk, None);
        int(&mut chunk, 2);
        bytes(&mut chunk, Some(b"h1"));
        bytes(&mut chunk, Some(b"x"));
        bytes(&mut chunk, Some(b"h2"));
        bytes(&mut chunk, None);
        let mut rows = Rows::new(&chunk);
        let mut headers = Vec::new();
        let first = rows.next_row(&mut headers).unwrap().unwrap();
        assert_eq!(
            first,
            Row {
                partition: None,
                key: Some(b"k"),
                value: Some(b"v1")
            }
        );
        assert!(headers.is_empty());
        let second = rows.next_row(&mut headers).unwrap().unwrap();
        assert_eq!(
            (second.partition, second.key, second.value),
            (Some(3), None, None)
        );
        assert_eq!(headers.len(), 2);
        assert_eq!(
            (headers[0].key, headers[0].value),
            (&b"h1"[..], Some(&b"x"[..]))
        );
        assert_eq!((headers[1].key, headers[1].value), (&b"h2"[..], None));
        assert!(rows.next_row(&mut headers).unwrap().is_none());
    }

    #[test]
    fn lengths_past_the_end_are_errors_naming_the_row() {
        let mut chunk = Vec::new();
        int(&mut chunk, -1);
        bytes(&mut chunk, None);
        bytes(&mut chunk, Some(b"ok"));
        int(&mut chunk, 0);
        int(&mut chunk, -1);
        int(&mut chunk, 1000);
        chunk.extend_from_slice(b"short");
        let mut rows = Rows::new(&chunk);
        let mut headers = Vec::new();
        assert!(rows.next_row(&mut headers).unwrap().is_some());
        let err = rows.next_row(&mut headers).unwrap_err();
        assert!(
            err.contains("row 1") && err.contains("key length 1000"),
            "{err}"
        );
        let err = Rows::new(&[1, 2]).next_row(&mut headers).unwrap_err();
        assert!(err.contains("ends inside the partition"), "{err}");
        let mut chunk = Vec::new();
        int(&mut chunk, -5);
        let err = Rows::new(&chunk).next_row(&mut headers).unwrap_err();
        assert!(err.contains("partition -5"), "{err}");
    }
}
