// host_main.cc: runs one kernel of ../kernels.cu on the CPU (see
// host_shim.h) as a job file says, for emulate_test.go:
//
//   kernel NAME GRID BLOCK
//   file ID PATH      a buffer read from PATH and written back after
//   ptr ID OFFSET     an argument: byte OFFSET into buffer ID
//   null              an argument: a NULL pointer
//   int N | float F   an argument: a scalar
//
// one line each, the arguments in the kernel's parameter order.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "host_shim.h"

thread_local sw_dim3 threadIdx, blockIdx;
sw_dim3 blockDim, gridDim;
std::barrier<>* sw_block_barrier;

extern "C" {
void rmsnorm(float*, unsigned short*, const float*, const float*, int, float);
void add_bias(float*, const float*, int, int);
void rope(float*, const float*, const float*, int, int, int);
void store_kv(unsigned short*, unsigned short*, const float*, const float*, int, int, int, int);
void attention(float*, const float*, const unsigned short*, const unsigned short*, float*, int, int, int, int,
               int, int, int, float, int);
void glu(unsigned short*, const float*, const float*, int, int);
void to_f16(unsigned short*, const float*, int);
void add(float*, const float*, int);
void f16_to_f32(float*, const unsigned short*, int);
}

struct Arg {
    void* p = nullptr;
    int i = 0;
    float f = 0;
};

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::cerr << "usage: emu JOBFILE\n";
        return 2;
    }
    std::ifstream job(argv[1]);
    std::string line, name;
    unsigned grid = 0, block = 0;
    std::vector<Arg> args;
    std::vector<std::pair<std::string, std::vector<char>>> bufs;
    bufs.reserve(32);
    while (std::getline(job, line)) {
        std::istringstream in(line);
        std::string kind;
        in >> kind;
        Arg a;
        if (kind == "kernel") {
            in >> name >> grid >> block;
            continue;
        } else if (kind == "file") {
            size_t id;
            std::string path;
            in >> id >> path;
            std::ifstream f(path, std::ios::binary);
            std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            data.resize(data.size() + 64); // room past the end is never read
            if (bufs.size() != id) {
                std::cerr << "file ids must count from 0: " << line << "\n";
                return 2;
            }
            bufs.emplace_back(path, std::move(data));
            continue;
        } else if (kind == "ptr") {
            size_t id, off;
            in >> id >> off;
            a.p = bufs.at(id).second.data() + off;
        } else if (kind == "null") {
        } else if (kind == "int") {
            in >> a.i;
        } else if (kind == "float") {
            in >> a.f;
        } else {
            std::cerr << "bad job line: " << line << "\n";
            return 2;
        }
        args.push_back(a);
    }
#define P(k, T) ((T*)args.at(k).p)
    auto run = [&]() {
        const std::vector<Arg>& a = args;
        if (name == "rmsnorm")
            rmsnorm(P(0, float), P(1, unsigned short), P(2, float), P(3, float), a.at(4).i, a.at(5).f);
        else if (name == "add_bias")
            add_bias(P(0, float), P(1, float), a.at(2).i, a.at(3).i);
        else if (name == "rope")
            rope(P(0, float), P(1, float), P(2, float), a.at(3).i, a.at(4).i, a.at(5).i);
        else if (name == "store_kv")
            store_kv(P(0, unsigned short), P(1, unsigned short), P(2, float), P(3, float), a.at(4).i, a.at(5).i,
                     a.at(6).i, a.at(7).i);
        else if (name == "attention")
            attention(P(0, float), P(1, float), P(2, unsigned short), P(3, unsigned short), P(4, float), a.at(5).i,
                      a.at(6).i, a.at(7).i, a.at(8).i, a.at(9).i, a.at(10).i, a.at(11).i, a.at(12).f, a.at(13).i);
        else if (name == "glu")
            glu(P(0, unsigned short), P(1, float), P(2, float), a.at(3).i, a.at(4).i);
        else if (name == "to_f16")
            to_f16(P(0, unsigned short), P(1, float), a.at(2).i);
        else if (name == "add")
            add(P(0, float), P(1, float), a.at(2).i);
        else if (name == "f16_to_f32")
            f16_to_f32(P(0, float), P(1, unsigned short), a.at(2).i);
        else
            throw std::runtime_error("unknown kernel " + name);
    };
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    if (name != "rmsnorm" && name != "attention") {
        // No barriers: one thread plays every CUDA thread in turn.
        for (unsigned b = 0; b < grid; b++) {
            blockIdx = {b, 0, 0};
            for (unsigned t = 0; t < block; t++) {
                threadIdx = {t, 0, 0};
                run();
            }
        }
    } else {
        // A block's threads are real threads; they take the blocks one
        // after another, meeting at a barrier between blocks (the
        // __shared__ statics are the block's until then).
        std::barrier<> bar(block);
        sw_block_barrier = &bar;
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < block; t++) {
            threads.emplace_back([&, t]() {
                threadIdx = {t, 0, 0};
                for (unsigned b = 0; b < grid; b++) {
                    blockIdx = {b, 0, 0};
                    run();
                    bar.arrive_and_wait();
                }
            });
        }
        for (auto& th : threads) {
            th.join();
        }
    }
    for (auto& [path, data] : bufs) {
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        f.write(data.data(), data.size() - 64);
    }
    return 0;
}
