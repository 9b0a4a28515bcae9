#!/usr/bin/env python3
"""One-time import of NVDLA's public register table into octasim's register-map source.

    python3 firmware/regmap/import_nvdla_header.py \
        ../shared/reference/nvdla-regs/opendla_small.h > firmware/regmap/nvdla.json

nvdla.json is the source of truth afterwards (it also carries what the C header lacks:
access types); this script only documents where the addresses and fields came from. It is
not part of the build.
"""
import json
import re
import sys

UNITS = [  # (header prefix, octasim/trace unit name), longest prefixes first
    ("NVDLA_CFGROM_", "CFGROM"), ("NVDLA_MCIF_", "MCIF"), ("NVDLA_GEC_", "GEC"),
    ("NVDLA_CVIF_", "CVIF"), ("SDP_RDMA_", "SDP_RDMA"), ("PDP_RDMA_", "PDP_RDMA"),
    ("CDP_RDMA_", "CDP_RDMA"), ("CMAC_A_", "CMAC_A"), ("CMAC_B_", "CMAC_B"), ("GLB_", "GLB"),
    ("CDMA_", "CDMA"), ("CSC_", "CSC"), ("CACC_", "CACC"), ("SDP_", "SDP"), ("PDP_", "PDP"),
    ("CDP_", "CDP"), ("BDMA_", "BDMA"), ("RBK_", "RBK"),
]

RO = re.compile(r"(^S_STATUS$|CBUF_FLUSH_STATUS|HW_VERSION|NAN_INPUT|INF_INPUT|NAN_OUTPUT|"
                r"^D_STATUS$|OUT_SATURATION|^D_PERF_(?!ENABLE)|^STATUS|^STATUS_GRP)")


def access_of(unit, reg):
    if unit == "CFGROM":
        return "ro"
    if unit == "GLB" and reg == "S_INTR_STATUS":
        return "w1c"
    if unit == "GLB" and reg == "S_INTR_SET":
        return "wo"
    return "ro" if RO.search(reg) else "rw"


def main(path):
    text = open(path).read()
    addr_re = re.compile(r"#define (\w+)_0\s+_MK_ADDR_CONST\((0x[0-9a-fA-F]+)\)")
    units = {}
    order = []
    for m in addr_re.finditer(text):
        full, addr = m.group(1), int(m.group(2), 16)
        for prefix, unit in UNITS:
            if full.startswith(prefix):
                reg = full[len(prefix):]
                break
        else:
            raise SystemExit(f"unknown unit for {full}")
        if unit not in units:
            units[unit] = []
            order.append(unit)
        fields = []
        field_re = re.compile(
            r"#define %s_0_(\w+)_SHIFT\s+_MK_SHIFT_CONST\((\d+)\)\s*\n"
            r"#define %s_0_\1_FIELD\s+_MK_FIELD_CONST\((0x[0-9a-fA-F]+)," % (full, full))
        for f in field_re.finditer(text):
            name, lsb, mask = f.group(1), int(f.group(2)), int(f.group(3), 16)
            enums = {}
            enum_re = re.compile(r"#define %s_0_%s_(\w+)\s+_MK_ENUM_CONST\((0x[0-9a-fA-F]+)\)"
                                 % (full, name))
            for e in enum_re.finditer(text):
                enums[e.group(1)] = int(e.group(2), 16)
            field = {"name": name, "lsb": lsb, "width": mask.bit_length()}
            if enums:
                field["enum"] = enums
            if reg == "S_POINTER" and name == "CONSUMER":
                field["access"] = "ro"
            fields.append(field)
        units[unit].append({"name": reg, "addr": f"0x{addr:05x}", "access": access_of(unit, reg),
                            "fields": fields})

    out = ['{', '  "source": "NVDLA opendla_small.h (nv_small register table); access types are '
           'octasim\'s reading of NVDLA\'s documentation",', '  "units": [']
    for ui, unit in enumerate(order):
        regs = units[unit]
        out.append('    {"name": "%s", "registers": [' % unit)
        for ri, r in enumerate(regs):
            out.append("      " + json.dumps(r, separators=(", ", ": "))
                       + ("," if ri + 1 < len(regs) else ""))
        out.append("    ]}" + ("," if ui + 1 < len(order) else ""))
    out += ["  ]", "}"]
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
