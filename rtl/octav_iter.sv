// One OCTAV iteration's datapath (sim/octav/octav_functional.hpp): per element, the FP32
// magnitude (|x| signed, max(x, 0) unsigned, -0 -> 0), an unsigned compare of its bits with the
// threshold t (the largest FP32 <= s), and three accumulators:
//   m >  t:      count_above += 1, sum_above += m exactly;
//   0 < m <= t:  count_nonzero_below += 1.
// The sum is a SUM_W-bit fixed-point register with its LSB at 2^-149 (the smallest FP32
// subnormal): an element adds its significand (hidden bit for normal numbers) shifted left by
// max(e, 1) - 1. With 2^32 elements of at most 2^128 the total stays below 2^309, so 320 bits
// never wrap; the counts are CNT_W = 32 bits. One element per cycle when in_valid; `clear`
// zeroes the accumulators (synchronously, before a pass). The sum is read 32 bits at a time
// through rd_sel (combinational), which keeps the ports narrow.
// Checked bit for bit against models::octav_reduce (tests/rtl/octav_iter_rtl_test.cpp).
module octav_iter #(
    parameter int SUM_W = 320,
    parameter int CNT_W = 32
) (
    input  logic             clk,
    input  logic             rst_n,
    input  logic             clear,
    input  logic             in_valid,
    input  logic [     31:0] in_data,        // FP32 bits
    input  logic             cfg_unsigned,   // 1: magnitudes are max(x, 0)
    input  logic [     31:0] cfg_threshold,  // FP32 bits of t
    input  logic [      3:0] rd_sel,         // which 32-bit word of the sum
    output logic [CNT_W-1:0] count_above,
    output logic [CNT_W-1:0] count_nonzero_below,
    output logic [     31:0] sum_word
);
  logic [31:0] magnitude;
  logic [ 7:0] exponent;
  logic [23:0] significand;
  logic [ 7:0] position;
  logic [SUM_W-1:0] addend;
  logic above;
  logic nonzero;
  logic [SUM_W-1:0] sum_above;

  always_comb begin
    if (cfg_unsigned) magnitude = in_data[31] ? 32'd0 : in_data;
    else magnitude = {1'b0, in_data[30:0]};
    exponent    = magnitude[30:23];
    significand = {exponent != 8'd0, magnitude[22:0]};
    position    = exponent == 8'd0 ? 8'd0 : exponent - 8'd1;
    addend      = SUM_W'(significand) << position;
    above       = magnitude > cfg_threshold;
    nonzero     = magnitude != 32'd0;
    sum_word    = 32'(sum_above >> {rd_sel, 5'd0});
  end

  always_ff @(posedge clk) begin
    if (!rst_n || clear) begin
      sum_above           <= '0;
      count_above         <= '0;
      count_nonzero_below <= '0;
    end else if (in_valid) begin
      if (above) begin
        sum_above   <= sum_above + addend;
        count_above <= count_above + CNT_W'(1);
      end else if (nonzero) begin
        count_nonzero_below <= count_nonzero_below + CNT_W'(1);
      end
    end
  end
endmodule
