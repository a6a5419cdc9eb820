// SPDX-License-Identifier: BSL-1.0
/// @file
/// Data loading: LIBSVM text files, IDX (MNIST-style) files, bag-of-words
/// corpora, sharding by
/// member and seeded shuffles. dml/data/idx.hpp uses zlib: programs that
/// read IDX files link it (CMake: `ZLIB::ZLIB`). Not part of dml/dml.hpp.
#pragma once

#include <dml/data/bag_of_words.hpp>
#include <dml/data/idx.hpp>
#include <dml/data/libsvm.hpp>
#include <dml/data/shard.hpp>
