-- Wireshark dissector for the ALINEA occupancy report (hbh project, docs/reference/wire-format.md).
--
-- EtherType 0x88B5, version 2, message type 1: 42 bytes after the Ethernet header, big-endian,
-- bit fields most significant bit first. Install: `make wireshark` (copies this file into the
-- user's personal Lua plugin folder), or `tshark -X lua_script:wireshark/hbh_alinea.lua`.

local p = Proto("alinea", "ALINEA occupancy report")

local f = {
    version     = ProtoField.uint8("alinea.version", "Version", base.DEC, nil, 0xF0),
    msg_type    = ProtoField.uint8("alinea.msg_type", "Message type", base.DEC, { [1] = "occupancy" }, 0x0F),
    flags       = ProtoField.uint8("alinea.flags", "Flags", base.HEX),
    class       = ProtoField.uint8("alinea.class", "Class", base.DEC, nil, 0xE0),
    overflow    = ProtoField.bool("alinea.overflow", "Overflow (drops > 0)", 8, nil, 0x01),
    node_id     = ProtoField.uint16("alinea.node_id", "Node id", base.DEC),
    port        = ProtoField.uint16("alinea.port", "Port", base.DEC),
    occupancy   = ProtoField.uint32("alinea.occupancy", "Occupancy (packets)", base.DEC),
    capacity    = ProtoField.uint32("alinea.capacity", "Capacity (packets)", base.DEC),
    timestamp   = ProtoField.uint64("alinea.timestamp_us", "Timestamp (us)", base.DEC),
    seq         = ProtoField.uint32("alinea.seq", "Sequence", base.DEC),
    drops       = ProtoField.uint32("alinea.drops", "Drops (packets)", base.DEC),
    interval    = ProtoField.uint32("alinea.interval_us", "Report interval (us)", base.DEC),
    drained     = ProtoField.uint32("alinea.drained", "Drained (packets)", base.DEC),
    drained_ts  = ProtoField.uint64("alinea.drained_ts_us", "Drained at (us)", base.DEC),
}
p.fields = f

local REPORT_BYTES = 42

function p.dissector(buf, pinfo, tree)
    if buf:len() < 1 then return 0 end
    pinfo.cols.protocol = "ALINEA"
    local t = tree:add(p, buf(0, math.min(buf:len(), REPORT_BYTES)))
    t:add(f.version, buf(0, 1))
    t:add(f.msg_type, buf(0, 1))
    local version = buf(0, 1):bitfield(0, 4)
    if version ~= 2 or buf:len() < REPORT_BYTES then
        t:add_expert_info(PI_MALFORMED, PI_ERROR,
            string.format("version %d, %d bytes: this dissector reads version 2, 42 bytes", version, buf:len()))
        return buf:len()
    end
    local flags = t:add(f.flags, buf(1, 1))
    flags:add(f.class, buf(1, 1))
    flags:add(f.overflow, buf(1, 1))
    t:add(f.node_id, buf(2, 2))
    t:add(f.port, buf(4, 2))
    t:add(f.occupancy, buf(6, 4))
    t:add(f.capacity, buf(10, 4))
    t:add(f.timestamp, buf(14, 6), buf(14, 6):uint64())
    t:add(f.seq, buf(20, 4))
    t:add(f.drops, buf(24, 4))
    t:add(f.interval, buf(28, 4))
    t:add(f.drained, buf(32, 4))
    t:add(f.drained_ts, buf(36, 6), buf(36, 6):uint64())
    pinfo.cols.info = string.format("node %d port %d class %d: %d/%d packets, seq %d, drops %d",
        buf(2, 2):uint(), buf(4, 2):uint(), buf(1, 1):bitfield(0, 3), buf(6, 4):uint(), buf(10, 4):uint(),
        buf(20, 4):uint(), buf(24, 4):uint())
    return REPORT_BYTES
end

DissectorTable.get("ethertype"):add(0x88B5, p)
