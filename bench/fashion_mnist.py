# SPDX-License-Identifier: BSL-1.0
# Shared by bench/torch_ddp.py and bench/liblinear.py: Fashion-MNIST from its
# IDX files, checked the way dml::data::read_idx checks them, so that the
# baselines train on exactly the data the dml trainers read.
import gzip
import math
import os
import zlib

try:  # numpy comes with Debian's python3-numpy; the scripts check it in main()
    import numpy as np
except ImportError:
    np = None

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


class DataError(Exception):
    pass


def read_idx(path, dims, limit=None):
    """An IDX file of unsigned bytes with `dims` dimensions (gzip or plain);
    the first `limit` items."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise DataError(f"{path}: cannot open the file ({e.strerror})")
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise DataError(f"{path}: truncated or corrupt gzip data ({e})")
    if len(raw) < 4:
        raise DataError(f"{path}: too short for an IDX header ({len(raw)} bytes)")
    if raw[0] != 0 or raw[1] != 0:
        raise DataError(f"{path}: bad magic: not an IDX file")
    if raw[2] != 0x08:
        raise DataError(f"{path}: unsupported IDX type code {raw[2]} (only 8, unsigned byte, is read)")
    if raw[3] != dims:
        raise DataError(f"{path}: {raw[3]} dimensions, expected {dims} "
                        f"({'images' if dims == 3 else 'labels'})")
    header = 4 + 4 * dims
    if len(raw) < header:
        raise DataError(f"{path}: truncated header")
    shape = [int.from_bytes(raw[4 + 4 * d:8 + 4 * d], "big") for d in range(dims)]
    if 0 in shape:
        raise DataError(f"{path}: a dimension is 0")
    count = math.prod(shape)
    have = len(raw) - header
    if have != count:
        raise DataError(f"{path}: {count} values announced, {have} present")
    values = np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape)
    return values[:limit] if limit else values


def pixels(data_dir, part, limit=None):
    """(pixels uint8 n x 784, labels int64 0..9) of part 'train' or 't10k'."""
    images = os.path.join(data_dir, f"{part}-images-idx3-ubyte.gz")
    labels = os.path.join(data_dir, f"{part}-labels-idx1-ubyte.gz")
    x = read_idx(images, 3, limit)
    y = read_idx(labels, 1, limit)
    if len(x) != len(y):
        raise DataError(f"{labels}: {len(y)} labels for {len(x)} images")
    if y.max() > 9:
        raise DataError(f"{labels}: label {int(y.max())} outside 0..9")
    return x.reshape(len(x), -1), y.astype(np.int64)
