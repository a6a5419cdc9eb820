#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Writes the seed corpus of the fuzz targets (corpus/<target>/seed-*).

Run from anywhere; the seeds are committed, so this only documents how they
were made and remakes them. Regression inputs found by fuzzing are kept next
to them as corpus/<target>/regression-*.
"""
import gzip
import os
import struct
import zlib

here = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(here, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# Bags of words: a good file, and each kind of bad line or lying number.
put("bag_of_words", "good", "# corpus\n0 1:2 3:1\n1 0:4\t2:1 # c\r\n\n2\n")
put("bag_of_words", "repeated-id", "0 1:2\n0 2:1\n")
put("bag_of_words", "huge", "0 4000000000:1\n1 2:1000000000000\n2 1:999999 2:999999\n")
put("bag_of_words", "twice", "0 3:1 3:2\n")
put("bag_of_words", "bad", "0 a:1 2:0 3:-1 :: 4:\n1:1\n")
put("bag_of_words", "empty", "# only a comment\n\n")

# LIBSVM: a good file, and one of each kind of bad line.
put("libsvm", "good", "# c\n+1 1:0.5 3:2\n\n-1 2:1.5e1   # t\n2 qid:3 1:-1 4:0.25\r\n0\n")
put("libsvm", "wide", "1 999999999:1")
put("libsvm", "signs", "+-1 1:1\n1 1:+-2\n")
put("libsvm", "qid", "1 qid:abc 1:1\n")
put("libsvm", "order", "1 3:1 2:1\n1 0:1\n1 -2:1\n")
put("libsvm", "special", "1 1:nan 2:inf\n1e39 1:1\n")
put("libsvm", "long", "1 " + " ".join("%d:1" % i for i in range(1, 40)))
put("libsvm", "empty", "")


def idx(type_code, dims, values):
    return bytes([0, 0, type_code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + bytes(values)


images = idx(8, [2, 2, 3], range(12))
put("idx", "images", images)
put("idx", "images.gz", gzip.compress(images, mtime=0))
put("idx", "labels", idx(8, [4], [9, 0, 3, 1]))
put("idx", "bad-magic", b"\x42" + images[1:])
put("idx", "bad-type", idx(0x0D, [2], [1, 2]))
put("idx", "lying-dims.gz", gzip.compress(idx(8, [65536, 65536], [1] * 50), mtime=0))
put("idx", "truncated", images[:-1])
put("idx", "trailing.gz", gzip.compress(images + b"\0", mtime=0))
put("idx", "cut.gz", gzip.compress(images, mtime=0)[:20])
# Issue #15: a small gzip file that inflates to far more than it weighs, with
# a bad magic number (refused after 4 bytes) and with dimensions that lie.
put("idx", "bomb-bad-magic.gz", gzip.compress(b"\x42" + bytes(4 << 20), 9, mtime=0))
put("idx", "bomb-lying-dims.gz", gzip.compress(idx(8, [4096, 4096, 64], []) + bytes(4 << 20), 9, mtime=0))


# Checkpoints: the first byte is the fuzz target's choice (bit 0: repair the
# checksums; bits 1-2: which vectors the program loads), then the file.
def checkpoint(vectors, user=b"", clock=7, epoch=1):
    codes = {"f": (9, 4, "<f"), "q": (4, 8, "<q"), "d": (10, 8, "<d"), "B": (5, 1, "<B"), "h": (2, 2, "<h")}
    table = b""
    data = b""
    for kind, values in vectors:
        code, size, fmt = codes[kind]
        table += struct.pack("<IIQQ", code, size, len(values), 3)
        data += b"".join(struct.pack(fmt, v) for v in values)
    total = 56 + len(table) + len(user) + len(data) + 4
    head = b"DMLCKPT\0" + struct.pack("<IIQQQQ", 1, len(vectors), total, clock, epoch, len(user))
    head += struct.pack("<I", zlib.crc32(head)) + b"\0" * 4
    body = head + table + user + data
    return body + struct.pack("<I", zlib.crc32(body))


two = checkpoint([("f", [1.5, -2, 0, 3]), ("q", [-1, 2**40])], b"hi")
put("checkpoint", "good-two", b"\x00" + two)
put("checkpoint", "good-double", b"\x02" + checkpoint([("d", [1, 2, 3])]))
put("checkpoint", "good-three", b"\x04" + checkpoint([("B", []), ("B", [1, 2, 3, 4, 5]), ("h", [-5])]))
put("checkpoint", "good-none", b"\x06" + checkpoint([], b"user"))
put("checkpoint", "wrong-shape", b"\x02" + two)
put("checkpoint", "bad-crc-repaired", b"\x01" + two[:60] + b"\x01" + two[61:])
lying = bytearray(two)
lying[16:24] = struct.pack("<Q", 2**40)
put("checkpoint", "lying-size", b"\x01" + bytes(lying))
put("checkpoint", "truncated", b"\x00" + two[:70])


# dml-mf rating files: a good file, huge ids, and one of each kind of bad line.
put("ratings", "good", "# user item rating\n0 1 3.5\n\n2\t0 -1e0 # c\r\n1 1 4\n")
put("ratings", "huge-ids", "4000000000 1 3.0\n18446744073709551615 2 1\n")
put("ratings", "overflow", "18446744073709551616 1 1\n")
put("ratings", "fields", "1 2\n1 2 3 4\n")
put("ratings", "signs", "-1 2 3\n+1 2 3\n1 2 +-3\n")
put("ratings", "special", "1 2 nan\n1 2 inf\n1 2 1e39\n1 2 0x10\n")
put("ratings", "long", "1 2 " + "9" * 5000 + "\n")
put("ratings", "empty", "")

# dml-pagerank's edge lists: a good file, huge and overflowing ids, a line
# with the wrong number of fields, signs and a line longer than the reader takes.
put("edges", "good", "# src dst\n0 1\n1 2\t# c\r\n\n2 0\n3 3\n")
put("edges", "huge-ids", "2147483647 0\n0 2147483648\n")
put("edges", "overflow", "18446744073709551616 1\n")
put("edges", "fields", "1\n1 2 3\n")
put("edges", "signs", "-1 2\n+1 2\n1 0x2\n")
put("edges", "long", "1 " + "9" * 2000 + "\n")
put("edges", "empty", "# only a comment\n\n")
