/* Parser corpus: one program that uses every P4_16 construct the front end must accept.
 * Self-contained (declares its own small core and architecture) so that it tests the
 * parser only. Not meant to type-check as a whole. */

error { NoError, PacketTooShort }
error { MyError, }
match_kind { exact, ternary, lpm, range, optional }

extern packet_in {
    void extract<T>(out T hdr);
    void extract<T>(out T hdr, in bit<32> varbits);
    T lookahead<T>();
    void advance(in bit<32> bits);
    bit<32> length();
}

extern packet_out {
    void emit<T>(in T hdr);
}

extern void verify(in bool check, in error toSignal);
@pure extern bit<16> checksum_of<D>(in D data);

extern register<T> {
    register(bit<32> size);
    @noSideEffects void read(out T result, in bit<32> index);
    void write(in bit<32> index, in T value);
}

extern Virtual {
    Virtual();
    abstract bit<16> f(in bit<16> ix);
    void run();
}

extern action_profile {
    action_profile(bit<32> size);
}

enum CounterType { packets, bytes, packets_and_bytes }

extern counter {
    counter(bit<32> size, CounterType type);
    void count(in bit<32> index);
}

extern direct_counter {
    direct_counter(CounterType type);
}

extern void digest<T>(in bit<32> receiver, in T data);

typedef bit<48> mac_t;
typedef bit<9> port_t;
type bit<32> ip_addr_t;
const port_t CPU_PORT = 9w255;
const bit<16> TYPE_IPV4 = 0x0800;
const int<8> NEG = -8s5;
const int BIG = 1_000_000;
const bool DEBUG = true;
const bit<4> BIN = 0b1010;
const bit<8> OCT = 0o17;
const bit<8> DEC = 0d99;
const bit<(4 + 4)> COMPUTED_WIDTH = 8w0xFF;

enum bit<8> Proto { TCP = 6, UDP = 17, ICMP = 1, }
enum Color { RED, GREEN, BLUE }

@controller_header("packet_in")
header packet_in_h {
    port_t ingress_port;
    bit<7> _pad;
}

header ethernet_h {
    mac_t dst;
    mac_t src;
    bit<16> type;
}

header ipv4_h {
    bit<4> version;
    bit<4> ihl;
    bit<8> tos;
    bit<16> len;
    bit<8> ttl;
    Proto protocol;
    ip_addr_t src;
    ip_addr_t dst;
}

header opt_h {
    bit<8> len;
    varbit<320> data;
}

header tcp_h { bit<16> sport; bit<16> dport; }
header udp_h { bit<16> sport; bit<16> dport; }

header_union l4_u {
    tcp_h tcp;
    udp_h udp;
}

header label_h { bit<20> label; bit<3> tc; bit bos; bit<8> ttl; }

struct headers_t {
    packet_in_h cpu;
    ethernet_h eth;
    label_h[4] labels;
    ipv4_h ipv4;
    l4_u l4;
}

struct meta_t {
    @field_list(1) port_t in_port;
    bit<32> hash;
    tuple<bit<8>, bool> pair;
    Color color;
}

struct pair_s<T> { T first; T second; }

struct digest_t { mac_t src; port_t port; }

parser Parser<H, M>(packet_in b, out H hdr, inout M meta);
control Control<H, M>(inout H hdr, inout M meta);
control Deparser<H>(packet_out b, in H hdr);
package Switch<H, M>(Parser<H, M> p, Control<H, M> c, Deparser<H> d);

parser SubParser(packet_in b, out ipv4_h ip) {
    state start {
        b.extract(ip);
        transition accept;
    }
}

parser MyParser(packet_in b, out headers_t hdr, inout meta_t meta) {
    const bit<8> LIMIT = 4;
    bit<8> count = 0;
    value_set<bit<16>>(4) custom_types;
    SubParser() sub;

    @name(".start") state start {
        b.extract(hdr.eth);
        transition select(hdr.eth.type) {
            TYPE_IPV4: parse_ipv4;
            0x8847 &&& 0xFFFF: parse_label;
            0x9000 .. 0x90FF: reject;
            custom_types: parse_ipv4;
            default: accept;
        }
    }

    state parse_label {
        b.extract(hdr.labels.next);
        count = count + 1;
        {
            bit<8> tmp = hdr.labels.last.ttl;
            meta.hash = (bit<32>) tmp;
        }
        transition select(hdr.labels.last.bos, count) {
            (1w1, _): parse_ipv4;
            (0, LIMIT): reject;
            (_, default): parse_label;
        }
    }

    state parse_ipv4 {
        b.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4, error.MyError);
        bit<8> nxt = b.lookahead<bit<8>>();
        if (nxt == 0) {
            b.advance(8);
        }
        sub.apply(b, hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            Proto.TCP: parse_tcp;
            Proto.UDP: parse_udp;
        }
    }

    state parse_tcp { b.extract(hdr.l4.tcp); transition accept; }
    state parse_udp { b.extract(hdr.l4.udp); transition accept; }
}

bit<16> add_one(in bit<16> x) {
    return x + 1;
}

T pick<T>(in bool c, in T a, in T b) {
    if (c) {
        return a;
    } else {
        return b;
    }
}

control MyIngress(inout headers_t hdr, inout meta_t meta)(bit<32> table_size) {
    register<bit<32>>(512) regs;
    register<bit<48>>(32w64) stamps;
    counter(1024, CounterType.packets_and_bytes) pkts;
    direct_counter(CounterType.packets) hits;
    Virtual() v = {
        bit<16> f(in bit<16> ix) {
            return ix + 1;
        }
    };
    bit<32> tmp;
    const bit<32> LIMIT = 10;

    action drop() {
        exit;
    }

    action forward(port_t port, mac_t dst) {
        hdr.eth.dst = dst;
        meta.in_port = port;
    }

    @name("ingress.set_color") action set_color(in Color c, bit<8> x) {
        meta.color = c;
    }

    table ipv4_lpm {
        key = {
            hdr.ipv4.dst: lpm @name("dst");
            hdr.ipv4.isValid(): exact;
            meta.hash[7:0]: ternary;
        }
        actions = {
            forward;
            @defaultonly drop;
            set_color(Color.RED);
        }
        size = 1024;
        const default_action = drop();
        counters = hits;
        implementation = action_profile(32);
        @my_annotation custom_property = 5;
    }

    table fixed {
        key = { hdr.eth.type: exact; meta.hash: range; }
        actions = { drop; forward; }
        const entries = {
            (0x0800, 1 .. 5): forward(1, 0xAABBCCDDEEFF);
            (0x86DD, _): drop();
            (_, default): drop;
        }
        default_action = forward(9w1, 48w0);
    }

    table prioritized {
        key = { hdr.ipv4.src: ternary; }
        actions = { drop; }
        entries = {
            const priority = 10: 0x0A000000 &&& 0xFF000000: drop();
            priority = 20: 0x0B000000 &&& 0xFF000000: drop();
        }
    }

    apply {
        hdr.labels.push_front(1);
        hdr.labels[0].setValid();
        hdr.labels.pop_front(2);
        tmp = hdr.labels.lastIndex + (bit<32>) hdr.labels.size;
        if (hdr.ipv4.isValid() && !hdr.eth.isValid() || meta.hash == 0) {
            switch (ipv4_lpm.apply().action_run) {
                forward: { regs.write(0, 1); }
                drop:
                set_color: {}
                default: { exit; }
            }
        } else if (ipv4_lpm.apply().hit) {
            fixed.apply();
        }
        if (!fixed.apply().miss) { return; }
        switch (meta.color) {
            Color.RED: { meta.hash = 1; }
            Color.GREEN:
            Color.BLUE: { meta.hash = 2; }
        }
        @atomic {
            regs.read(tmp, 0);
            regs.write(0, tmp |+| 1);
        }
        bit<16> x = 16w1;
        x = x |-| 2;
        x = x << 2 >> 1;
        x = (x & 0xF) | (x ^ 3) & ~x;
        x = x * 2 / 3 % 4 - -x;
        bit<32> cat = x ++ x;
        bit<8> sl = cat[31:24];
        cat[7:0] = sl;
        bool b = x > 1 ? x < 2 : x >= 3 && x <= 4 || x != 5;
        x = (bit<16>) (int<16>) x;
        meta.pair = { 8w1, true };
        meta.pair = { first = 8w1, second = true };
        hdr.l4 = {#};
        digest<digest_t>(1, { hdr.eth.src, meta.in_port });
        x = add_one(x = x);
        x = pick<bit<16>>(true, x, 0);
        x = v.f(ix = x);
        pkts.count((bit<32>) meta.in_port);
        ;
        log_msg("x={}", { x });
    }
}

control MyDeparser(packet_out b, in headers_t hdr) {
    apply {
        b.emit(hdr.eth);
        b.emit(hdr.labels);
        b.emit(hdr.ipv4);
        b.emit(hdr.l4);
    }
}

extern void log_msg<T>(string msg, in T data);

Switch(MyParser(), MyIngress(1024), MyDeparser()) main;
