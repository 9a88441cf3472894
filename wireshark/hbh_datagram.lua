-- Wireshark dissector for the hbh project's datagrams (hosts/datagram.py, docs/reference/wire-format.md):
-- the 20-byte header every end-to-end flow's UDP payload starts with (magic 0x4842 "HB",
-- version 1), and the feedback each control sends back after it:
--   kind 1 CVIHIS feedback (32 bytes, docs/background/cvihis.md "Feedback wire format"),
--   kind 5 TFRC report (32 bytes, hosts/tfrc/wire.py),
--   kind 6 LEDBAT acknowledgement (12 bytes, hosts/e2e_host.py),
--   kind 7 GCC receiver report with REMB (32 bytes, docs/reference/wire-format.md "GCC receiver report").
-- Found by content (a heuristic on UDP: the magic and the version), whatever the ports, and
-- on UDP port 5001 before the dissector Wireshark has for it.
-- Install: `make wireshark`, or `tshark -X lua_script:wireshark/hbh_datagram.lua`.

local p = Proto("hbh", "hbh datagram")

local kinds = {
    [0] = "data", [1] = "CVIHIS feedback", [2] = "TCP model data", [3] = "TCP model ACK",
    [4] = "TCP model SYN", [5] = "TFRC report", [6] = "LEDBAT ack", [7] = "GCC report",
    [8] = "pgmcc data", [9] = "pgmcc feedback",
}
local commands = {
    [0] = "hold", [1] = "---", [2] = "--", [3] = "++", [4] = "+++", [5] = "MD", [6] = "-", [7] = "+",
}

local f = {
    magic     = ProtoField.uint16("hbh.magic", "Magic", base.HEX),
    version   = ProtoField.uint8("hbh.version", "Version", base.DEC),
    kind      = ProtoField.uint8("hbh.kind", "Kind", base.DEC, kinds),
    flow      = ProtoField.uint16("hbh.flow", "Flow", base.DEC),
    rtt       = ProtoField.uint16("hbh.rtt_100us", "RTT hint (100 us)", base.DEC),
    seq       = ProtoField.uint32("hbh.seq", "Sequence", base.DEC),
    ts        = ProtoField.uint64("hbh.ts_ns", "Send time (ns)", base.DEC),
    padding   = ProtoField.bytes("hbh.padding", "Padding"),

    cv_version = ProtoField.uint8("cvihis.version", "Version", base.DEC),
    cv_flags   = ProtoField.uint8("cvihis.flags", "Flags", base.HEX),
    cv_loss    = ProtoField.bool("cvihis.loss", "Loss (MD)", 8, nil, 0x01),
    cv_rtm     = ProtoField.bool("cvihis.rtm", "Receiver in RTM", 8, nil, 0x02),
    cv_command = ProtoField.uint8("cvihis.command", "Command", base.DEC, commands),
    cv_area    = ProtoField.uint8("cvihis.area", "Area", base.DEC, { [255] = "none (MD)" }),
    cv_step    = ProtoField.int16("cvihis.step_milli", "Step (1/1000 packet per sqrt(RTT))", base.DEC),
    cv_grad    = ProtoField.int8("cvihis.gradient", "Gradient", base.DEC),
    cv_fb_seq  = ProtoField.uint32("cvihis.fb_seq", "Feedback number", base.DEC),
    cv_echo    = ProtoField.uint64("cvihis.echo_ts_ns", "Echoed send time (ns)", base.DEC),
    cv_delay   = ProtoField.uint64("cvihis.echo_delay_ns", "Echo held (ns)", base.DEC),
    cv_lost    = ProtoField.uint32("cvihis.lost_total", "Lost so far", base.DEC),

    tf_recv    = ProtoField.uint64("tfrc.t_recvdata_ns", "t_recvdata (ns)", base.DEC),
    tf_delay   = ProtoField.uint64("tfrc.t_delay_ns", "t_delay (ns)", base.DEC),
    tf_x       = ProtoField.double("tfrc.x_recv_Bps", "X_recv (bytes/s)"),
    tf_p       = ProtoField.double("tfrc.p", "Loss event rate p"),

    lb_seq     = ProtoField.uint32("ledbat.seq", "Acknowledged sequence", base.DEC),
    lb_owd     = ProtoField.int64("ledbat.owd_ns", "One-way delay (ns, receiver clock - sender clock)", base.DEC),

    gc_remb    = ProtoField.uint64("gcc.remb_bps", "REMB (b/s)", base.DEC),
    gc_echo    = ProtoField.uint64("gcc.echo_ts_ns", "Echoed send time (ns)", base.DEC),
    gc_hold    = ProtoField.uint32("gcc.hold_us", "Held (us)", base.DEC),
    gc_high    = ProtoField.uint32("gcc.highest_seq", "Highest sequence", base.DEC),
    gc_lost    = ProtoField.uint32("gcc.cumulative_lost", "Cumulative lost", base.DEC),
    gc_frac    = ProtoField.uint8("gcc.fraction_lost", "Fraction lost (1/256)", base.DEC),
    gc_flags   = ProtoField.uint8("gcc.flags", "Flags", base.HEX),
    gc_valid   = ProtoField.bool("gcc.remb_valid", "REMB valid", 8, nil, 0x01),
    gc_early   = ProtoField.bool("gcc.early", "Early report", 8, nil, 0x02),
    gc_usage   = ProtoField.uint8("gcc.usage", "Detector", base.DEC, { [0] = "normal", [1] = "over-use", [2] = "under-use" }),
    gc_state   = ProtoField.uint8("gcc.rate_state", "Rate controller", base.DEC, { [0] = "hold", [1] = "increase", [2] = "decrease" }),
}
p.fields = f

local HEADER = 20

local function short(t, what, need, have)
    t:add_expert_info(PI_MALFORMED, PI_ERROR, string.format("%s: %d bytes, need %d", what, have, need))
end

local function cvihis(buf, t)
    if buf:len() < 32 then return short(t, "CVIHIS feedback", 32, buf:len()) end
    local s = t:add(buf(0, 32), "CVIHIS feedback")
    s:add(f.cv_version, buf(0, 1))
    local fl = s:add(f.cv_flags, buf(1, 1))
    fl:add(f.cv_loss, buf(1, 1))
    fl:add(f.cv_rtm, buf(1, 1))
    s:add(f.cv_command, buf(2, 1))
    s:add(f.cv_area, buf(3, 1))
    s:add(f.cv_step, buf(4, 2))
    s:add(f.cv_grad, buf(6, 1))
    s:add(f.cv_fb_seq, buf(8, 4))
    s:add(f.cv_echo, buf(12, 8))
    s:add(f.cv_delay, buf(20, 8))
    s:add(f.cv_lost, buf(28, 4))
    return string.format("CVIHIS feedback %d: %s", buf(8, 4):uint(), commands[buf(2, 1):uint()] or "?")
end

local function tfrc(buf, t)
    if buf:len() < 32 then return short(t, "TFRC report", 32, buf:len()) end
    local s = t:add(buf(0, 32), "TFRC report")
    s:add(f.tf_recv, buf(0, 8))
    s:add(f.tf_delay, buf(8, 8))
    s:add(f.tf_x, buf(16, 8))
    s:add(f.tf_p, buf(24, 8))
    return string.format("TFRC report: X_recv %.0f B/s, p %.6f", buf(16, 8):float(), buf(24, 8):float())
end

local function ledbat(buf, t)
    if buf:len() < 12 then return short(t, "LEDBAT ack", 12, buf:len()) end
    local s = t:add(buf(0, 12), "LEDBAT acknowledgement")
    s:add(f.lb_seq, buf(0, 4))
    s:add(f.lb_owd, buf(4, 8))
    return string.format("LEDBAT ack %d", buf(0, 4):uint())
end

local function gcc(buf, t)
    if buf:len() < 32 then return short(t, "GCC report", 32, buf:len()) end
    local s = t:add(buf(0, 32), "GCC receiver report (RTCP RR + REMB)")
    s:add(f.gc_remb, buf(0, 8))
    s:add(f.gc_echo, buf(8, 8))
    s:add(f.gc_hold, buf(16, 4))
    s:add(f.gc_high, buf(20, 4))
    s:add(f.gc_lost, buf(24, 4))
    s:add(f.gc_frac, buf(28, 1))
    local fl = s:add(f.gc_flags, buf(29, 1))
    fl:add(f.gc_valid, buf(29, 1))
    fl:add(f.gc_early, buf(29, 1))
    s:add(f.gc_usage, buf(30, 1))
    s:add(f.gc_state, buf(31, 1))
    return string.format("GCC report: REMB %s b/s, highest %d", tostring(buf(0, 8):uint64()), buf(20, 4):uint())
end

local feedback = { [1] = cvihis, [5] = tfrc, [6] = ledbat, [7] = gcc }

local function dissect(buf, pinfo, tree)
    local t = tree:add(p, buf())
    t:add(f.magic, buf(0, 2))
    t:add(f.version, buf(2, 1))
    t:add(f.kind, buf(3, 1))
    t:add(f.flow, buf(4, 2))
    t:add(f.rtt, buf(6, 2))
    t:add(f.seq, buf(8, 4))
    t:add(f.ts, buf(12, 8))
    local kind = buf(3, 1):uint()
    pinfo.cols.protocol = "HBH"
    local info = string.format("flow %d %s seq %d", buf(4, 2):uint(), kinds[kind] or ("kind " .. kind), buf(8, 4):uint())
    local body = feedback[kind]
    if body ~= nil and buf:len() > HEADER then
        info = body(buf(HEADER):tvb(), t) or info
    elseif body ~= nil then
        short(t, kinds[kind], HEADER + 1, buf:len())
    elseif buf:len() > HEADER then
        t:add(f.padding, buf(HEADER))
    end
    pinfo.cols.info = string.format("flow %d: %s", buf(4, 2):uint(), info)
    return buf:len()
end

local function heuristic(buf, pinfo, tree)
    if buf:len() < HEADER or buf(0, 2):uint() ~= 0x4842 or buf(2, 1):uint() ~= 1 then return false end
    dissect(buf, pinfo, tree)
    return true
end

function p.dissector(buf, pinfo, tree)
    if not heuristic(buf, pinfo, tree) then return 0 end
    return buf:len()
end

p:register_heuristic("udp", heuristic)
-- Port 5001 (the data port, hosts/datagram.py) is also claimed by CPFI: on it, ours is tried first
-- (UDP tries the lower port, then heuristics); a payload without the magic goes on to the others.
DissectorTable.get("udp.port"):add(5001, p)
