//! The steps over a byte slice, as the struct codec's [`Source`]: what cargo tests and fuzzers run.

use super::JsonIn;
use crate::codec::{FieldBegin, ListBegin, MapBegin, Scalar, Sequence, Source, Values};
use crate::CoreError;

/// The steps over a byte slice, as a codec [`Source`]: a declined step is [`CoreError::JsonDeclined`].
#[derive(Debug)]
pub struct JsonSlice<'a> {
    pub json: JsonIn,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> JsonSlice<'a> {
    pub fn new(bytes: &'a [u8], json: JsonIn) -> Self {
        JsonSlice {
            json,
            bytes,
            pos: 0,
        }
    }

    /// Bytes taken from the slice (a held byte included).
    pub fn position(&self) -> usize {
        self.pos
    }

    fn taken<T>(&mut self, step: Option<(T, usize)>) -> Result<T, CoreError> {
        let (v, n) = step.ok_or(CoreError::JsonDeclined)?;
        self.pos += n;
        Ok(v)
    }

    fn took(&mut self, step: Option<usize>) -> Result<(), CoreError> {
        self.taken(step.map(|n| ((), n)))
    }
}

impl<V: Values<Error = CoreError>> Source<V> for JsonSlice<'_> {
    fn remaining(&self) -> Option<usize> {
        Some(self.bytes.len() - self.pos + usize::from(self.json.held().is_some()))
    }

    fn struct_begin(&mut self) -> Result<i64, CoreError> {
        let step = self.json.struct_begin(&self.bytes[self.pos..]);
        self.took(step).map(|()| 0)
    }

    fn struct_end(&mut self, _saved: i64) -> Result<(), CoreError> {
        let step = self.json.struct_end(&self.bytes[self.pos..]);
        self.took(step)
    }

    fn field_begin(&mut self) -> Result<FieldBegin, CoreError> {
        let step = self.json.field_begin(&self.bytes[self.pos..]);
        self.taken(step)
    }

    fn field_end(&mut self) -> Result<(), CoreError> {
        let step = self.json.field_end(&self.bytes[self.pos..]);
        self.took(step)
    }

    fn map_begin(&mut self) -> Result<MapBegin, CoreError> {
        let step = self.json.map_begin(&self.bytes[self.pos..]);
        self.taken(step)
    }

    fn map_end(&mut self) -> Result<(), CoreError> {
        let step = self.json.map_end(&self.bytes[self.pos..]);
        self.took(step)
    }

    fn list_begin(&mut self, _seq: Sequence) -> Result<ListBegin, CoreError> {
        let step = self.json.list_begin(&self.bytes[self.pos..]);
        self.taken(step)
    }

    fn list_end(&mut self, _seq: Sequence) -> Result<(), CoreError> {
        let step = self.json.list_end(&self.bytes[self.pos..]);
        self.took(step)
    }

    fn scalar(&mut self, kind: Scalar, values: &mut V) -> Result<V::Value, CoreError> {
        let step = self.json.scalar(kind, &self.bytes[self.pos..], values);
        self.taken(step)
    }

    fn skip(&mut self, ttype: i64, _depth: i64, _values: &mut V) -> Result<(), CoreError> {
        let step = self.json.skip(ttype, &self.bytes[self.pos..]);
        self.took(step)
    }
}
