//! Weights read tensor by tensor from a `.safetensors` file, so loading a model never holds the
//! whole file in memory beside the model (reading the file into one buffer first, as
//! `VarBuilder::from_buffered_safetensors` needs, doubles the peak: 90 MB of file plus 90 MB of
//! tensors for all-MiniLM-L6-v2). Memory-mapping the file would avoid the buffer too, but
//! candle's mapped loader is `unsafe` (a file changed under the map is undefined behaviour) and
//! Engram forbids unsafe code.
//!
//! The format (safetensors, Hugging Face): an 8-byte little-endian header length, a JSON header
//! `{name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {…}}`, then the data,
//! offsets counted from the end of the header. Every tensor's offsets and size are checked
//! against its shape and the file's length when the header is read, so a truncated or
//! damaged file is refused before any tensor is built.

use candle_core::{DType, Device, Shape, Tensor};
use candle_nn::var_builder::SimpleBackend;
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Largest header accepted, in bytes (safetensors' own limit is 100 MB; real headers of
/// sentence encoders are a few kB).
const MAX_HEADER: u64 = 100 * 1024 * 1024;

#[derive(serde::Deserialize)]
struct Entry {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: [u64; 2],
}

struct Info {
    dtype: DType,
    shape: Vec<usize>,
    /// Absolute position in the file.
    start: u64,
    len: usize,
}

/// A safetensors file opened for reading one tensor at a time (a candle [`SimpleBackend`]).
pub struct FileWeights {
    path: PathBuf,
    file: Mutex<std::fs::File>,
    tensors: HashMap<String, Info>,
}

fn dtype_of(name: &str) -> Option<DType> {
    Some(match name {
        "F32" => DType::F32,
        "F16" => DType::F16,
        "BF16" => DType::BF16,
        "F64" => DType::F64,
        "I64" => DType::I64,
        "U32" => DType::U32,
        "U8" => DType::U8,
        _ => return None,
    })
}

/// Why a safetensors file could not be opened; each message says what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    /// The file cannot be opened or its size read.
    #[error("cannot read it: {0}")]
    Read(std::io::Error),
    /// The file ends before its 8-byte header length.
    #[error("it is shorter than a safetensors header")]
    Short,
    /// The header length is absurd or longer than the file.
    #[error("its header claims {claimed} bytes in a file of {file_len}")]
    HeaderLength {
        /// The header length the file states.
        claimed: u64,
        /// The file's length in bytes.
        file_len: u64,
    },
    /// The header cannot be read.
    #[error("cannot read its header: {0}")]
    Header(std::io::Error),
    /// The header is not the JSON safetensors writes.
    #[error("its header is not safetensors JSON: {0}")]
    NotJson(serde_json::Error),
    /// A tensor's entry is malformed, of an unknown dtype, does not fit its shape, or lies
    /// past the end of the file.
    #[error("tensor {name} {problem}")]
    Tensor {
        /// The tensor's name.
        name: String,
        /// What is wrong with it.
        problem: String,
    },
}

impl FileWeights {
    /// Opens `path` and reads its header. Errors ([`WeightsError`]): the file cannot be read,
    /// the header is not safetensors JSON, a tensor has an unknown dtype, or its data does not
    /// fit its shape or lies past the end of the file (a truncated file).
    pub fn open(path: &Path) -> Result<Self, WeightsError> {
        let mut file = std::fs::File::open(path).map_err(WeightsError::Read)?;
        let file_len = file.metadata().map_err(WeightsError::Read)?.len();
        let mut n = [0u8; 8];
        file.read_exact(&mut n).map_err(|_| WeightsError::Short)?;
        let header_len = u64::from_le_bytes(n);
        if header_len > MAX_HEADER || 8 + header_len > file_len {
            return Err(WeightsError::HeaderLength {
                claimed: header_len,
                file_len,
            });
        }
        let mut header = vec![0u8; header_len as usize];
        file.read_exact(&mut header).map_err(WeightsError::Header)?;
        let mut raw: HashMap<String, serde_json::Value> =
            serde_json::from_slice(&header).map_err(WeightsError::NotJson)?;
        raw.remove("__metadata__");
        let data_start = 8 + header_len;
        let mut tensors = HashMap::with_capacity(raw.len());
        for (name, value) in raw {
            let tensor = |problem: String| WeightsError::Tensor {
                name: name.clone(),
                problem,
            };
            let e: Entry = serde_json::from_value(value)
                .map_err(|e| tensor(format!("has a malformed entry: {e}")))?;
            let dtype = dtype_of(&e.dtype)
                .ok_or_else(|| tensor(format!("has an unsupported dtype {}", e.dtype)))?;
            let [begin, end] = e.data_offsets;
            let elements: usize = e.shape.iter().product();
            let len = elements * dtype.size_in_bytes();
            if end < begin || end - begin != len as u64 {
                return Err(tensor(format!(
                    "holds {} bytes but its shape {:?} needs {len}",
                    end.saturating_sub(begin),
                    e.shape
                )));
            }
            if data_start + end > file_len {
                return Err(tensor(format!(
                    "lies past the end of the file ({file_len} bytes): the file is truncated"
                )));
            }
            tensors.insert(
                name,
                Info {
                    dtype,
                    shape: e.shape,
                    start: data_start + begin,
                    len,
                },
            );
        }
        Ok(Self {
            path: path.to_owned(),
            file: Mutex::new(file),
            tensors,
        })
    }

    /// Reads tensor `name` as stored, then converts it to `dtype`.
    fn read(&self, name: &str, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        let info = self.tensors.get(name).ok_or_else(|| {
            candle_core::Error::CannotFindTensor {
                path: name.to_owned(),
            }
            .bt()
        })?;
        let stored = if info.dtype == DType::F32 {
            // Read straight into the tensor's own buffer: no second copy of the largest
            // tensors (the word embeddings are half of all-MiniLM-L6-v2).
            let mut values = vec![0f32; info.len / 4];
            self.read_into(name, info, bytemuck::cast_slice_mut(&mut values))?;
            if cfg!(target_endian = "big") {
                for v in &mut values {
                    *v = f32::from_bits(u32::from_le(v.to_bits()));
                }
            }
            Tensor::from_vec(values, info.shape.as_slice(), dev)?
        } else {
            let mut bytes = vec![0u8; info.len];
            self.read_into(name, info, &mut bytes)?;
            Tensor::from_raw_buffer(&bytes, info.dtype, &info.shape, dev)?
        };
        stored.to_dtype(dtype)
    }

    /// Fills `buf` (exactly the tensor's bytes) from the file.
    fn read_into(&self, name: &str, info: &Info, buf: &mut [u8]) -> candle_core::Result<()> {
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.seek(SeekFrom::Start(info.start))
            .and_then(|_| file.read_exact(buf))
            .map_err(|e| {
                candle_core::Error::Msg(format!(
                    "cannot read tensor {name} from {}: {e}",
                    self.path.display()
                ))
            })
    }
}

impl SimpleBackend for FileWeights {
    fn get(
        &self,
        s: Shape,
        name: &str,
        _: candle_nn::Init,
        dtype: DType,
        dev: &Device,
    ) -> candle_core::Result<Tensor> {
        let tensor = self.read(name, dtype, dev)?;
        if tensor.shape() != &s {
            return Err(candle_core::Error::UnexpectedShape {
                msg: format!("shape mismatch for {name}"),
                expected: s,
                got: tensor.shape().clone(),
            }
            .bt());
        }
        Ok(tensor)
    }

    fn get_unchecked(&self, name: &str, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        self.read(name, dtype, dev)
    }

    fn contains_tensor(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file with one 2×3 `f32` tensor and one 4-element `f16` tensor, plus metadata.
    fn sample(dir: &Path) -> PathBuf {
        let a: Vec<f32> = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        // 0.5, -1.0, 2.0 and 8.0 as IEEE half-precision bit patterns.
        let b: [u16; 4] = [0x3800, 0xBC00, 0x4000, 0x4800];
        let mut data: Vec<u8> = a.iter().flat_map(|x| x.to_le_bytes()).collect();
        data.extend(b.iter().flat_map(|x| x.to_le_bytes()));
        let header = serde_json::json!({
            "__metadata__": {"format": "pt"},
            "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
            "b": {"dtype": "F16", "shape": [4], "data_offsets": [24, 32]},
        })
        .to_string();
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend(header.as_bytes());
        file.extend(data);
        let path = dir.join("model.safetensors");
        std::fs::write(&path, file).unwrap();
        path
    }

    #[test]
    fn tensors_are_read_one_by_one_in_the_asked_dtype() {
        let dir = tempfile::tempdir().unwrap();
        let w = FileWeights::open(&sample(dir.path())).unwrap();
        let dev = Device::Cpu;
        let a = w
            .get(
                (2, 3).into(),
                "a",
                candle_nn::Init::Const(0.),
                DType::F32,
                &dev,
            )
            .unwrap();
        assert_eq!(
            a.to_vec2::<f32>().unwrap(),
            [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
        );
        let b = w.get_unchecked("b", DType::F32, &dev).unwrap();
        assert_eq!(b.to_vec1::<f32>().unwrap(), [0.5, -1.0, 2.0, 8.0]);
        let a16 = w.get_unchecked("a", DType::F16, &dev).unwrap();
        assert_eq!(a16.dtype(), DType::F16);
        assert!(w.contains_tensor("a") && !w.contains_tensor("__metadata__"));
        let wrong = w
            .get(
                (3, 2).into(),
                "a",
                candle_nn::Init::Const(0.),
                DType::F32,
                &dev,
            )
            .unwrap_err();
        assert!(wrong.to_string().contains("shape mismatch"), "{wrong}");
        assert!(w.get_unchecked("c", DType::F32, &dev).is_err());
    }

    #[test]
    fn truncated_or_garbled_files_are_refused_when_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = sample(dir.path());
        let whole = std::fs::read(&path).unwrap();
        std::fs::write(&path, &whole[..whole.len() - 4]).unwrap();
        let e = FileWeights::open(&path).err().unwrap().to_string();
        assert!(e.contains("truncated"), "{e}");
        std::fs::write(&path, &whole[..6]).unwrap();
        let e = FileWeights::open(&path).err().unwrap().to_string();
        assert!(e.contains("shorter"), "{e}");
        let mut garbled = whole.clone();
        garbled[9] = b'#';
        std::fs::write(&path, &garbled).unwrap();
        let e = FileWeights::open(&path).err().unwrap().to_string();
        assert!(e.contains("not safetensors JSON"), "{e}");
    }
}
