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
#include <cstdint>
#include <cstdio>
#include <functional>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <ucontext.h>
#include <vector>

#include "host_shim.h"

sw_dim3 threadIdx, blockIdx, blockDim, gridDim;

// The fibers of a launch with barriers: each CUDA thread runs until it
// reaches a barrier (sw_sync) or ends, then hands back to the scheduler,
// which resumes the next one; a round ends when every thread has had its
// turn. On x86-64 the switch is a few instructions (sw_switch below);
// elsewhere ucontext's, which also saves the signal mask with a system
// call per switch.
static std::function<void()>* sw_body;
static std::vector<bool> sw_done;
static unsigned sw_cur;

#if defined(__x86_64__)
extern "C" void sw_switch(void** save_sp, void* to_sp);
// sw_switch saves the callee-saved registers on the current stack, stores
// its pointer in *save_sp and resumes the stack to_sp (System V ABI).
asm(R"(
.text
.globl sw_switch
sw_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
)");
static void* sw_sched_sp;
static std::vector<void*> sw_sp;

void sw_sync() { sw_switch(&sw_sp[sw_cur], sw_sched_sp); }

static void sw_fiber_entry()
{
    (*sw_body)();
    sw_done[sw_cur] = true;
    for (;;) {
        sw_switch(&sw_sp[sw_cur], sw_sched_sp);
    }
}

// sw_init lays out a fresh stack [lo, lo+size) so that switching to the
// returned pointer starts sw_fiber_entry.
static void* sw_init(char* lo, size_t size)
{
    uintptr_t top = ((uintptr_t)(lo + size)) & ~(uintptr_t)15;
    void** sp = (void**)top;
    *--sp = nullptr;                   // alignment: entry sees rsp = 8 mod 16
    *--sp = (void*)sw_fiber_entry;     // ret address
    for (int i = 0; i < 6; i++) {
        *--sp = nullptr;               // rbp rbx r12 r13 r14 r15
    }
    return sp;
}

static void sw_resume(unsigned t) { sw_switch(&sw_sched_sp, sw_sp[t]); }
static void sw_prepare(unsigned block, char* mem, size_t stack)
{
    sw_sp.resize(block);
    for (unsigned t = 0; t < block; t++) {
        sw_sp[t] = sw_init(mem + t * stack, stack);
    }
}
#else
static ucontext_t sw_sched;
static std::vector<ucontext_t> sw_fibers;

void sw_sync() { swapcontext(&sw_fibers[sw_cur], &sw_sched); }

static void sw_fiber_main()
{
    (*sw_body)();
    sw_done[sw_cur] = true;
}

static void sw_resume(unsigned t) { swapcontext(&sw_sched, &sw_fibers[t]); }
static void sw_prepare(unsigned block, char* mem, size_t stack)
{
    sw_fibers.resize(block);
    for (unsigned t = 0; t < block; t++) {
        getcontext(&sw_fibers[t]);
        sw_fibers[t].uc_stack.ss_sp = mem + t * stack;
        sw_fibers[t].uc_stack.ss_size = stack;
        sw_fibers[t].uc_link = &sw_sched;
        makecontext(&sw_fibers[t], sw_fiber_main, 0);
    }
}
#endif

extern "C" {
void rmsnorm(float*, unsigned short*, const float*, const float*, int, float);
void add_bias(float*, const float*, int, int);
void rope(float*, const float*, const float*, int, int, int);
// The kernels that take a segment table, through kernels.cu's flat entry
// points (count, then each segment's kc, vc pointers and pos, off, n, ring).
void store_kv_flat(const float*, const float*, int, int, int, void* const*, const int*);
void attention_flat(float*, const float*, float*, int, int, int, int, int, float, int, unsigned short*, int,
                    void* const*, const int*);
void glu(unsigned short*, const float*, const float*, int, int);
void to_f16(unsigned short*, const float*, int);
void add(float*, const float*, int);
void f16_to_f32(float*, const unsigned short*, int);
#define SW_MATVEC_DECL(NAME)                                                                               \
    void NAME(const unsigned short*, int, int, const unsigned short*, float*, int, const unsigned short*, float*, \
              int, const unsigned short*, float*, int, int, unsigned short*, int);
SW_MATVEC_DECL(matvec_1)
SW_MATVEC_DECL(matvec_4)
SW_MATVEC_DECL(matvec_16)
SW_MATVEC_DECL(mma_8)
SW_MATVEC_DECL(mma_16)
SW_MATVEC_DECL(mma_64)
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
    // segs gathers a segment table written flat from argument k on (the
    // count, then per segment kc, vc, pos, off, n, ring) into ptrs and ints.
    std::vector<void*> ptrs;
    std::vector<int> ints;
    auto segs = [&](size_t k) {
        ptrs.clear(); // run() calls this once per CUDA thread; each kernel copies the table at entry
        ints.clear();
        const int count = args.at(k).i;
        if (count < 1 || count > 64) {
            throw std::runtime_error("segment count out of range");
        }
        for (int i = 0; i < count; i++) {
            const size_t b = k + 1 + 6 * (size_t)i;
            ptrs.push_back(args.at(b).p);
            ptrs.push_back(args.at(b + 1).p);
            for (size_t j = 2; j < 6; j++) {
                ints.push_back(args.at(b + j).i);
            }
        }
        return count;
    };
    auto run = [&]() {
        const std::vector<Arg>& a = args;
        if (name == "rmsnorm")
            rmsnorm(P(0, float), P(1, unsigned short), P(2, float), P(3, float), a.at(4).i, a.at(5).f);
        else if (name == "add_bias")
            add_bias(P(0, float), P(1, float), a.at(2).i, a.at(3).i);
        else if (name == "rope")
            rope(P(0, float), P(1, float), P(2, float), a.at(3).i, a.at(4).i, a.at(5).i);
        else if (name == "store_kv")
        {
            const int count = segs(4);
            store_kv_flat(P(0, float), P(1, float), a.at(2).i, a.at(3).i, count, ptrs.data(), ints.data());
        }
        else if (name == "attention")
        {
            const int count = segs(11);
            attention_flat(P(0, float), P(1, float), P(2, float), a.at(3).i, a.at(4).i, a.at(5).i, a.at(6).i, a.at(7).i,
                           a.at(8).f, a.at(9).i, P(10, unsigned short), count, ptrs.data(), ints.data());
        }
        else if (name == "glu")
            glu(P(0, unsigned short), P(1, float), P(2, float), a.at(3).i, a.at(4).i);
        else if (name == "to_f16")
            to_f16(P(0, unsigned short), P(1, float), a.at(2).i);
        else if (name == "add")
            add(P(0, float), P(1, float), a.at(2).i);
        else if (name == "matvec_1" || name == "matvec_4" || name == "matvec_16" || name.rfind("mma_", 0) == 0) {
            auto f = name == "matvec_1" ? matvec_1
                : name == "matvec_4"    ? matvec_4
                : name == "matvec_16"   ? matvec_16
                : name == "mma_8"       ? mma_8
                : name == "mma_16"      ? mma_16
                : name == "mma_64"      ? mma_64
                                        : throw std::runtime_error("unknown kernel " + name);
            f(P(0, unsigned short), a.at(1).i, a.at(2).i, P(3, unsigned short), P(4, float), a.at(5).i,
              P(6, unsigned short), P(7, float), a.at(8).i, P(9, unsigned short), P(10, float), a.at(11).i, a.at(12).i,
              P(13, unsigned short), a.at(14).i);
        } else if (name == "f16_to_f32")
            f16_to_f32(P(0, float), P(1, unsigned short), a.at(2).i);
        else
            throw std::runtime_error("unknown kernel " + name);
    };
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    if (name != "rmsnorm" && name != "attention" && name.rfind("matvec_", 0) != 0 && name.rfind("mma_", 0) != 0) {
        // No barriers: the CUDA threads run one after another.
        for (unsigned b = 0; b < grid; b++) {
            blockIdx = {b, 0, 0};
            for (unsigned t = 0; t < block; t++) {
                threadIdx = {t, 0, 0};
                run();
            }
        }
    } else {
        // One fiber per CUDA thread for the whole launch: each runs the
        // blocks in turn, meeting the others at a barrier after each.
        std::function<void()> body = [&]() {
            for (unsigned b = 0; b < grid; b++) {
                blockIdx = {b, 0, 0};
                run();
                sw_sync();
            }
        };
        sw_body = &body;
        // Stacks left uninitialized: only the pages a fiber uses are touched.
        const size_t stack = 32 * 1024;
        std::unique_ptr<char[]> stackMem(new char[block * stack]);
        sw_done.assign(block, false);
        sw_prepare(block, stackMem.get(), stack);
        for (bool any = true; any;) {
            any = false;
            for (unsigned t = 0; t < block; t++) {
                if (sw_done[t]) {
                    continue;
                }
                sw_cur = t;
                threadIdx = {t, 0, 0};
                sw_resume(t);
                any = true;
            }
        }
    }
    for (auto& [path, data] : bufs) {
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        f.write(data.data(), data.size() - 64);
    }
    return 0;
}
