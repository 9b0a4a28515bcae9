// MemorySystem: every expected cycle count below is derived by hand from the configuration the
// test sets up (see the comments), not read back from the model.
#include "sim/mem/memory_system.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>

namespace octasim {
namespace {

using sc_core::SC_NS;
using sc_core::sc_time;

// A client with `ports` initiator sockets bound to the memory system's crossbar.
struct Client final : sc_core::sc_module {
  std::vector<std::unique_ptr<tlm_utils::simple_initiator_socket<Client>>> sockets;
  Client(const sc_core::sc_module_name& name, unsigned ports) : sc_core::sc_module(name) {
    for (unsigned i = 0; i < ports; ++i) {
      sockets.push_back(std::make_unique<tlm_utils::simple_initiator_socket<Client>>(
          ("port" + std::to_string(i)).c_str()));
    }
  }
};

// One memory system with its clients, elaborated (sc_start(0)); requests are issued from the
// test body at absolute cycles (the kernel stays at time 0).
class Rig {
 public:
  Rig(const HwConfig& hw, unsigned ports = 1)
      : image_(32), mem_("mem", hw, image_, sc_time(1, SC_NS)), client_("client", ports) {
    for (auto& s : client_.sockets) s->bind(mem_.socket);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  }
  // Issues a request at cycle `at` through `port`; returns the cycle it completed.
  std::uint64_t access(bool read, std::uint64_t addr, unsigned len, std::uint64_t at,
                       unsigned port = 0) {
    std::vector<std::uint8_t> data(len);
    tlm::tlm_generic_payload trans;
    trans.set_command(read ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
    trans.set_address(addr);
    trans.set_data_ptr(data.data());
    trans.set_data_length(len);
    trans.set_streaming_width(len);
    trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_time delay(static_cast<double>(at), SC_NS);
    (*client_.sockets[port])->b_transport(trans, delay);
    EXPECT_EQ(trans.get_response_status(), tlm::TLM_OK_RESPONSE);
    return static_cast<std::uint64_t>((sc_core::sc_time_stamp() + delay) / sc_time(1, SC_NS) + 0.5);
  }
  std::uint64_t read(std::uint64_t addr, unsigned len, std::uint64_t at, unsigned port = 0) {
    return access(true, addr, len, at, port);
  }
  std::uint64_t write(std::uint64_t addr, unsigned len, std::uint64_t at, unsigned port = 0) {
    return access(false, addr, len, at, port);
  }
  MemorySystem& mem() { return mem_; }

 private:
  MemoryImage image_;
  MemorySystem mem_;
  Client client_;
};

std::uint64_t counter(const stats::Group& g, const std::string& name) {
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (g.info(i).name == name) return g.value(i);
  }
  ADD_FAILURE() << "no counter " << g.path() << "." << name;
  return 0;
}

// One partition, one L2 slice of 4 KiB, 4 ways x 128-byte lines = 8 sets; crossbar 4 cycles each
// way, no port limit; DRAM 32 B/cycle, 1 bank, tRCD = CL = tRP = 14, tRAS = 32, memif 40.
HwConfig small_l2() {
  HwConfig hw;
  hw.mem.partitions = 1;
  hw.mem.interleave_bytes = 256;
  hw.mem.xbar_latency = 4;
  hw.mem.xbar_port_bytes_per_cycle = 0;
  hw.mem.l2_slices_per_partition = 1;
  hw.mem.l2_slice_bytes = 4096;
  hw.mem.l2_ways = 4;
  hw.mem.l2_line_bytes = 128;
  hw.mem.l2_hit_latency = 20;
  hw.mem.l2_bytes_per_cycle = 64;
  hw.mem.dram_bytes_per_cycle = 32;
  hw.mem.dram_banks = 1;
  hw.mem.dram_row_bytes = 2048;
  hw.mem.dram_burst_bytes = 64;
  hw.mem.dram_trcd = 14;
  hw.mem.dram_trp = 14;
  hw.mem.dram_cl = 14;
  hw.mem.dram_tras = 32;
  hw.dla.primary_memif_latency = 40;
  hw.mem.dram_write_latency = 24;
  return hw;
}

TEST(MemorySystem, L2HitAfterMissOnTheSameLine) {
  Rig rig(small_l2());
  // Miss: xbar 4, tag 20, DRAM bank closed tRCD + CL = 28, the line's 128 B at 32 B/cycle = 4,
  // memif 40, slice port 128 B at 64 B/cycle = 2, xbar back 4.
  EXPECT_EQ(rig.read(0, 128, 0), 4u + 20 + 28 + 4 + 40 + 2 + 4);
  // Hit: xbar 4, hit 20, port 2, xbar 4.
  EXPECT_EQ(rig.read(0, 128, 1000), 1000u + 4 + 20 + 2 + 4);
  // Part of the line: still a hit; 32 B take one port cycle.
  EXPECT_EQ(rig.read(64, 32, 2000), 2000u + 4 + 20 + 1 + 4);
  const stats::Group& l2 = rig.mem().l2_statistics(0);
  EXPECT_EQ(counter(l2, "hits"), 2u);
  EXPECT_EQ(counter(l2, "misses"), 1u);
  EXPECT_EQ(rig.mem().bytes_read(), 128u);  // one line from DRAM
}

TEST(MemorySystem, LruEvictsTheLeastRecentlyUsedOfWaysPlusOneLines) {
  Rig rig(small_l2());
  // 8 sets of 128-byte lines: lines 1024 bytes apart share set 0.
  for (std::uint64_t k = 0; k < 4; ++k) rig.read(k * 1024, 128, 1000 * k);
  rig.read(0, 128, 5000);     // hit: line 0 becomes the most recently used
  rig.read(4096, 128, 6000);  // the fifth line evicts line 1024 (least recently used)
  const stats::Group& l2 = rig.mem().l2_statistics(0);
  EXPECT_EQ(counter(l2, "misses"), 5u);
  EXPECT_EQ(counter(l2, "evictions"), 1u);
  EXPECT_EQ(counter(l2, "hits"), 1u);
  EXPECT_EQ(rig.read(0, 128, 7000), 7000u + 4 + 20 + 2 + 4);  // still there: a hit
  EXPECT_EQ(counter(l2, "hits"), 2u);
  rig.read(1024, 128, 8000);  // gone: a miss that evicts again (line 2048 now)
  EXPECT_EQ(counter(l2, "misses"), 6u);
  EXPECT_EQ(counter(l2, "evictions"), 2u);
  EXPECT_EQ(counter(l2, "writebacks"), 0u);  // clean lines go silently
  EXPECT_EQ(rig.mem().bytes_written(), 0u);
}

TEST(MemorySystem, DirtyEvictionWritesTheLineBackToDram) {
  Rig rig(small_l2());
  // A whole-line write allocates without fetching and is taken after xbar 4, tag 20, port 2,
  // and acknowledged xbar 4 later.
  EXPECT_EQ(rig.write(0, 128, 0), 4u + 20 + 2 + 4);
  EXPECT_EQ(rig.mem().bytes_read(), 0u);
  EXPECT_EQ(rig.mem().bytes_written(), 0u);  // write-back: nothing reaches DRAM yet
  for (std::uint64_t k = 1; k <= 4; ++k) rig.read(k * 1024, 128, 1000 * k);
  const stats::Group& l2 = rig.mem().l2_statistics(0);
  EXPECT_EQ(counter(l2, "evictions"), 1u);
  EXPECT_EQ(counter(l2, "writebacks"), 1u);
  EXPECT_EQ(rig.mem().bytes_written(), 128u);
  EXPECT_EQ(counter(rig.mem().dram_statistics(0), "write_transactions"), 1u);
}

TEST(MemorySystem, PartialWriteMissAllocatesWithoutFetching) {
  Rig rig(small_l2());
  rig.write(8, 8, 0);
  EXPECT_EQ(rig.mem().bytes_read(), 0u);                    // no fetch
  EXPECT_EQ(rig.read(8, 8, 1000), 1000u + 4 + 20 + 1 + 4);  // the written bytes hit
  // Bytes never written: the line is fetched (a miss), then merged.
  EXPECT_EQ(rig.read(16, 8, 2000), 2000u + 4 + 20 + 28 + 4 + 40 + 1 + 4);
  const stats::Group& l2 = rig.mem().l2_statistics(0);
  EXPECT_EQ(counter(l2, "misses"), 2u);
  EXPECT_EQ(counter(l2, "hits"), 1u);
  EXPECT_EQ(rig.mem().bytes_read(), 128u);
}

TEST(MemorySystem, InterleaveSendsConsecutiveGranulesToDifferentSlicesAndPartitions) {
  HwConfig hw = load_hw_config("soc_small");  // 2 partitions x 2 slices, 256-byte granules
  ASSERT_EQ(hw.mem.partitions, 2u);
  ASSERT_EQ(hw.mem.l2_slices_per_partition, 2u);
  ASSERT_EQ(hw.mem.interleave_bytes, 256u);
  Rig rig(hw);
  const unsigned want_slice[] = {0, 1, 2, 3, 0, 1};
  const unsigned want_partition[] = {0, 0, 1, 1, 0, 0};
  for (unsigned g = 0; g < 6; ++g) {
    const MemorySystem::Route r = rig.mem().route(g * 256u + 17);
    EXPECT_EQ(r.slice, want_slice[g]) << "granule " << g;
    EXPECT_EQ(r.partition, want_partition[g]) << "granule " << g;
  }
  rig.read(0, 1024, 0);  // four granules: one per slice, two lines each
  for (unsigned s = 0; s < 4; ++s) {
    EXPECT_EQ(counter(rig.mem().l2_statistics(s), "bytes_read"), 256u) << "slice " << s;
    EXPECT_EQ(counter(rig.mem().l2_statistics(s), "misses"), 2u) << "slice " << s;
  }
  EXPECT_EQ(counter(rig.mem().dram_statistics(0), "bytes_read"), 512u);
  EXPECT_EQ(counter(rig.mem().dram_statistics(1), "bytes_read"), 512u);
}

TEST(MemorySystem, InterleaveWithoutL2AlternatesPartitions) {
  HwConfig hw = load_hw_config("soc_small");
  hw.mem.l2_slices_per_partition = 0;
  Rig rig(hw);
  EXPECT_EQ(rig.mem().route(0).partition, 0u);
  EXPECT_EQ(rig.mem().route(256).partition, 1u);
  EXPECT_EQ(rig.mem().route(512).partition, 0u);
  rig.read(128, 512, 0);  // 128 B in granule 0, 256 in granule 1, 128 in granule 2
  EXPECT_EQ(counter(rig.mem().dram_statistics(0), "bytes_read"), 256u);
  EXPECT_EQ(counter(rig.mem().dram_statistics(1), "bytes_read"), 256u);
}

// No L2, one partition, no crossbar cost; 2 banks of 2048-byte rows, tRCD = tRP = CL = 14,
// tRAS = 32, 32 B/cycle, memif 40.
HwConfig banked_dram() {
  HwConfig hw = small_l2();
  hw.mem.l2_slices_per_partition = 0;
  hw.mem.xbar_latency = 0;
  hw.mem.dram_banks = 2;
  return hw;
}

TEST(MemorySystem, DramRowHitMissAndConflictLatencies) {
  Rig rig(banked_dram());
  const std::uint64_t transfer = 64 / 32, memif = 40;
  // Rows interleave across banks: 0..2047 bank 0 row 0, 2048.. bank 1 row 0, 4096.. bank 0 row 1.
  EXPECT_EQ(rig.read(0, 64, 0), 14u + 14 + transfer + memif);               // closed: tRCD + CL
  EXPECT_EQ(rig.read(64, 64, 1000), 1000u + 14 + transfer + memif);         // row hit: CL
  EXPECT_EQ(rig.read(2048, 64, 2000), 2000u + 14 + 14 + transfer + memif);  // bank 1 closed
  EXPECT_EQ(rig.read(4096, 64, 3000),
            3000u + 14 + 14 + 14 + transfer + memif);  // conflict: tRP + tRCD + CL
  // Back to row 0 of bank 0 one cycle later: the precharge waits for tRAS (32) after row 1's
  // activation at 3000 + 14 (tRP) = 3014; the bank is free for commands again at its column
  // command 3028 plus the 2-cycle transfer.
  const std::uint64_t precharge = 3014 + 32;
  EXPECT_EQ(rig.read(0, 64, 3001), precharge + 14 + 14 + 14 + transfer + memif);
  const stats::Group& ch = rig.mem().dram_statistics(0);
  EXPECT_EQ(counter(ch, "row_hits"), 1u);
  EXPECT_EQ(counter(ch, "row_misses"), 2u);
  EXPECT_EQ(counter(ch, "row_conflicts"), 2u);
  EXPECT_EQ(counter(ch, "activates"), 4u);
}

TEST(MemorySystem, WriteIsAcknowledgedWriteLatencyAfterItsTransfer) {
  Rig rig(banked_dram());
  EXPECT_EQ(rig.write(0, 64, 0), 14u + 14 + 2 + 24);  // tRCD + CL, transfer, write latency
}

// Many clients streaming reads, all issued at once: the DRAM data buses are the bottleneck.
double stream_bandwidth(const HwConfig& hw, unsigned ports, std::uint64_t bytes, unsigned request,
                        std::uint64_t* dram_bytes) {
  Rig rig(hw, ports);
  std::uint64_t end = 0;
  for (std::uint64_t a = 0; a < bytes; a += request) {
    end = std::max(end, rig.read(a, request, 0, static_cast<unsigned>(a / request % ports)));
  }
  *dram_bytes = rig.mem().bytes_read();
  return static_cast<double>(bytes) / static_cast<double>(end);
}

void expect_saturated(const char* name) {
  const HwConfig hw = load_hw_config(name);
  const double peak = hw.mem.partitions * hw.dram_bandwidth();  // 2 x 32, 8 x 32
  std::uint64_t dram_bytes = 0;
  const std::uint64_t bytes = 4u << 20;
  const double bw = stream_bandwidth(hw, 8, bytes, hw.mem.l2_line_bytes, &dram_bytes);
  EXPECT_EQ(dram_bytes, bytes);  // every line missed once
  EXPECT_LE(bw, peak);
  EXPECT_GE(bw, 0.97 * peak);
  std::printf("%s: %.2f B/cycle of %.0f peak\n", name, bw, peak);
}

TEST(MemorySystem, StreamingReadsSaturateBothPartitionsOfSocSmall) {
  expect_saturated("soc_small");
}

TEST(MemorySystem, StreamingReadsSaturateEightPartitionsOfSocLarge) {
  expect_saturated("soc_large");
}

TEST(MemorySystem, StreamingReadsWithoutL2SaturateEveryPartition) {
  HwConfig hw = load_hw_config("soc_small");
  hw.mem.l2_slices_per_partition = 0;
  const double peak = hw.mem.partitions * hw.dram_bandwidth();
  std::uint64_t dram_bytes = 0;
  const double bw = stream_bandwidth(hw, 4, 1u << 20, 256, &dram_bytes);
  EXPECT_LE(bw, peak);
  EXPECT_GE(bw, 0.97 * peak);
  std::printf("soc_small without L2: %.2f B/cycle of %.0f peak\n", bw, peak);
}

TEST(MemorySystem, OnePortIsLimitedByItsCrossbarPort) {
  HwConfig hw = load_hw_config("soc_large");  // 256 B/cycle of DRAM, 128 B/cycle per port
  std::uint64_t dram_bytes = 0;
  const double bw = stream_bandwidth(hw, 1, 1u << 20, hw.mem.l2_line_bytes, &dram_bytes);
  EXPECT_LE(bw, hw.mem.xbar_port_bytes_per_cycle);
  EXPECT_GE(bw, 0.97 * hw.mem.xbar_port_bytes_per_cycle);
  std::printf("soc_large, one port: %.2f B/cycle (port %u)\n", bw,
              hw.mem.xbar_port_bytes_per_cycle);
}

// nv_small: one partition, no L2, no crossbar, zero bank timing: the old single DRAM bus of 4
// B/cycle, reads done primary_memif_latency (64) after their transfer, writes acknowledged
// dram_write_latency (24) after theirs, every client in request order.
TEST(MemorySystem, NvSmallIsTheFixedLatencyBus) {
  const HwConfig hw = load_hw_config("nv_small");
  ASSERT_EQ(hw.dram_bandwidth(), 4u);
  Rig rig(hw, 2);
  EXPECT_EQ(rig.read(0x1000, 32, 0), 8u + 64);          // bus 0..8
  EXPECT_EQ(rig.write(0x2000, 32, 0, 1), 16u + 24);     // waits for the bus: 8..16
  EXPECT_EQ(rig.read(0x3000, 8, 10, 1), 16u + 2 + 64);  // bus 16..18
  EXPECT_EQ(rig.read(0x40, 8, 100), 102u + 64);         // idle bus: 100..102
  // Across a 256-byte granule and a 2048-byte row, 6 bytes from an odd address: ceil(6/4) = 2.
  EXPECT_EQ(rig.read(0x7fd, 6, 200), 202u + 64);
  EXPECT_EQ(rig.mem().busy_cycles(), 8u + 8 + 2 + 2 + 2);
  EXPECT_EQ(rig.mem().bytes_read(), 32u + 8 + 8 + 6);
  EXPECT_EQ(rig.mem().bytes_written(), 32u);
  EXPECT_EQ(rig.mem().bytes_per_cycle(), 4u);
}

}  // namespace
}  // namespace octasim

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
