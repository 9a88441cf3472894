#include <core.p4>
#include <v1model.p4>
header h_t { bit<32> f1; bit<8> b1; }
struct H { h_t data; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) { state start { pkt.extract(hdr.data); transition accept; } }
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action setf1(bit<32> val) { hdr.data.f1 = val; }
    table test1 {
        key = { hdr.data.b1 : exact; hdr.data.f1 : selector; }
        actions = { setf1; NoAction; }
        @name("sel_profile") implementation = action_selector(HashAlgorithm.crc16, 32w1024, 32w14);
    }
    table test2 {
        key = { hdr.data.b1 : exact; }
        actions = { setf1; NoAction; }
        @name(".ap") implementation = action_profile(32w64);
    }
    apply { test1.apply(); test2.apply(); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.data); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
