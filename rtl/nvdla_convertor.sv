// NVDLA convertor datapath: y = saturate(round_half_away(((x - offset) * scale) >> shift)).
//
// One input per cycle, result registered (latency 1). The rounding is built the way a
// hardware shifter does it — floor shift, then add the guide bit unless the value is a
// negative exact half — so it is an independent formulation of models/precision/convertor.hpp,
// which this block is checked against bit for bit (tests/rtl).
// sat_count counts saturated outputs, sticks at 2^32-1, and clears synchronously.
module nvdla_convertor (
    input  logic        clk,
    input  logic        rst_n,
    input  logic        in_valid,
    input  logic [31:0] in_data,            // INT32
    input  logic [31:0] cfg_offset,         // INT32
    input  logic [15:0] cfg_scale,          // INT16
    input  logic [ 5:0] cfg_shift,          // UINT6
    input  logic [ 1:0] cfg_out_precision,  // 0: INT8, 1: INT16, 2: INT32
    input  logic        sat_clear,
    output logic        out_valid,
    output logic [31:0] out_data,           // sign-extended to 32 bits
    output logic        out_saturated,
    output logic [31:0] sat_count
);
  logic signed [32:0] diff;
  logic signed [48:0] product;
  logic signed [63:0] product_ext;
  logic signed [63:0] floor_shifted;
  logic               guide;
  logic               sticky;
  logic               round_up;
  logic signed [63:0] rounded;
  logic signed [63:0] out_min;
  logic signed [63:0] out_max;
  logic        [31:0] clamped;
  logic               saturated;

  always_comb begin
    diff          = $signed({in_data[31], in_data}) - $signed({cfg_offset[31], cfg_offset});
    product       = diff * $signed(cfg_scale);
    product_ext   = 64'(product);
    floor_shifted = product_ext >>> cfg_shift;
    if (cfg_shift == 6'd0) begin
      guide  = 1'b0;
      sticky = 1'b0;
    end else begin
      guide  = product_ext[cfg_shift-6'd1];
      sticky = |(product_ext & ((64'd1 << (cfg_shift - 6'd1)) - 64'd1));
    end
    round_up = guide & (~product_ext[63] | sticky);  // a negative exact half stays at floor
    rounded  = floor_shifted + {63'd0, round_up};

    unique case (cfg_out_precision)
      2'd0: begin
        out_min = -64'sd128;
        out_max = 64'sd127;
      end
      2'd1: begin
        out_min = -64'sd32768;
        out_max = 64'sd32767;
      end
      default: begin
        out_min = -64'sd2147483648;
        out_max = 64'sd2147483647;
      end
    endcase
    saturated = (rounded < out_min) || (rounded > out_max);
    clamped   = saturated ? (rounded < out_min ? out_min[31:0] : out_max[31:0]) : rounded[31:0];
  end

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      out_valid     <= 1'b0;
      out_data      <= 32'd0;
      out_saturated <= 1'b0;
      sat_count     <= 32'd0;
    end else begin
      out_valid <= in_valid;
      if (in_valid) begin
        out_data      <= clamped;
        out_saturated <= saturated;
      end
      if (sat_clear) sat_count <= 32'd0;
      else if (in_valid && saturated && sat_count != 32'hffff_ffff) sat_count <= sat_count + 32'd1;
    end
  end
endmodule
