#include "config/partitions_conf.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/config_loader.h"

namespace ibsm::config {
namespace {

using fabric::Membership;
using fabric::PartitionMember;
using Kind = fabric::PartitionMember::Kind;

std::string errorOf(std::string_view text) {
  auto r = parsePartitionsConf(text, "partitions.conf");
  return r.ok() ? "(parsed fine)" : r.error().message;
}

// The examples of opensm(8), PARTITION CONFIGURATION, as they are.
constexpr std::string_view kOpenSmExamples = R"(
 Default=0x7fff : ALL, SELF=full ;
 NewPartition , ipoib : 0x123456=full, 0x3456789034=limited,  0x2134af2306 ;
 YetAnotherOne = 0x300 : SELF=full ;
 YetAnotherOne = 0x300 : ALL=limited ;
 ShareIO = 0x80 , defmember=full : 0x123451, 0x123452;
 # 0x123453, 0x123454 will be limited
 ShareIO = 0x80 : 0x123453, 0x123454, 0x123455=full;
 ShareIO   =   0x80   :   defmember=limited   :   0x123456,   0x123457,
 0x123458=full;
 Storage=0x0002, ipoib, mtu=5, rate=7, sl=1, Q_Key=0x0b1b, scope=2 :
        mgid=ff12:401b::0707,sl=1 # random IPv4 group
        mgid=ff12::1,sl=1,Q_Key=0xDEADBEEF,rate=3,mtu=2 # random group
        ALL_CAS=full, ALL_SWITCHES ;
)";

TEST(PartitionsConf, ReadsOpenSmsExamples) {
  auto r = parsePartitionsConf(kOpenSmExamples, "partitions.conf");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& p = *r;
  ASSERT_EQ(p.size(), 8u);
  EXPECT_EQ(p[0].name, "Default");
  EXPECT_EQ(p[0].pkey, 0x7fff);
  EXPECT_FALSE(p[0].ipoib);
  EXPECT_EQ(p[0].members, (std::vector<PartitionMember>{{Kind::kAll, {}, {}, Membership::kLimited},
                                                        {Kind::kSelf, {}, {}, Membership::kFull}}));
  EXPECT_EQ(p[0].origin, "partitions.conf:2");
  // No P_Key given: the lowest unused one.
  EXPECT_EQ(p[1].name, "NewPartition");
  EXPECT_EQ(p[1].pkey, 0x0001);
  ASSERT_TRUE(p[1].ipoib);
  EXPECT_EQ(p[1].ipoib->mtu, 4);
  EXPECT_EQ(p[1].ipoib->qkey, 0x0Bu);
  ASSERT_EQ(p[1].members.size(), 3u);
  EXPECT_EQ(p[1].members[0].guid, fabric::Guid{0x123456});
  EXPECT_EQ(p[1].members[0].membership, Membership::kFull);
  EXPECT_EQ(p[1].members[1].membership, Membership::kLimited);
  EXPECT_EQ(p[1].members[2].membership, Membership::kLimited);
  EXPECT_EQ(p[4].members[0].membership, Membership::kFull);  // defmember=full
  EXPECT_EQ(p[5].members[0].membership, Membership::kLimited);
  EXPECT_EQ(p[5].members[2].membership, Membership::kFull);
  // defmember between colons, members over two lines.
  ASSERT_EQ(p[6].members.size(), 3u);
  EXPECT_EQ(p[6].members[2].guid, fabric::Guid{0x123458});
  EXPECT_EQ(p[6].members[2].membership, Membership::kFull);
  EXPECT_EQ(p[6].origin, "partitions.conf:9");
  // IPoIB flags; mgid= lines are skipped whole (they contain ':' and ',').
  ASSERT_TRUE(p[7].ipoib);
  EXPECT_EQ(p[7].pkey, 0x0002);
  EXPECT_EQ(p[7].ipoib->mtu, 5);
  EXPECT_EQ(p[7].ipoib->rate, 7);
  EXPECT_EQ(p[7].ipoib->sl, 1);
  EXPECT_EQ(p[7].ipoib->qkey, 0x0b1bu);
  EXPECT_EQ(p[7].members, (std::vector<PartitionMember>{{Kind::kAllCas, {}, {}, Membership::kFull},
                                                        {Kind::kAllSwitches, {}, {}, Membership::kLimited}}));
}

TEST(PartitionsConf, NoDefaultRuleMeansAllLimitedSelfFull) {
  auto r = parsePartitionsConf("a=0x10: ALL_CAS=full;\n", "p.conf");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].pkey, 0x7fff);
  EXPECT_EQ((*r)[0].members, (std::vector<PartitionMember>{{Kind::kAll, {}, {}, Membership::kLimited},
                                                           {Kind::kSelf, {}, {}, Membership::kFull}}));
  auto none = parsePartitionsConf("a=0x10: ALL_CAS=full;\n", "p.conf", DefaultRule::kNone);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->size(), 1u);
  // An empty file (or only comments) is OpenSM's default rule alone.
  auto empty = parsePartitionsConf("# nothing\n", "p.conf");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->size(), 1u);
}

TEST(PartitionsConf, ErrorsNameFileLineAndPartition) {
  EXPECT_EQ(errorOf("a=0x10 : ALL=full ;\nb=0x11 : 0x12=fool ;\n"),
            "partitions.conf:2: b: 'fool' is not a membership (full, limited or both)");
  EXPECT_EQ(errorOf("a=0x10 : ALL=full\n"), "partitions.conf:1: statement does not end with ';'");
  EXPECT_EQ(errorOf("\n\na=0x10 ALL ;\n"),
            "partitions.conf:3: expected ':' between the partition definition and its members");
  EXPECT_EQ(errorOf("a=0x8000 : ALL ;"),
            "partitions.conf:1: a: P_Key '0x8000' is not a number in 0x0001..0x7fff");
  EXPECT_EQ(errorOf("a=zz : ALL ;"), "partitions.conf:1: a: P_Key 'zz' is not a number in 0x0001..0x7fff");
  EXPECT_EQ(errorOf("a=0x10, ipoib,\n mtu=9 : ALL ;"), "partitions.conf:2: a: 'mtu=9' is out of range 1..5");
  EXPECT_EQ(
      errorOf("a=0x10, fast : ALL ;"),
      "partitions.conf:1: a: unknown flag 'fast' (known: ipoib, indx0, defmember, mtu, rate, sl, scope, "
      "Q_Key, TClass, FlowLabel)");
  EXPECT_EQ(
      errorOf("a=0x10 :\n ALL,\n hostX ;"),
      "partitions.conf:3: a: 'hostX' is not a port GUID, ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS, SELF or "
      "node:PATTERN");
}

TEST(PartitionsConf, FormatReadsBack) {
  auto r = parsePartitionsConf(kOpenSmExamples, "partitions.conf", DefaultRule::kNone);
  ASSERT_TRUE(r.ok());
  std::vector<fabric::Partition> parts = *r;
  parts.push_back(
      {"hosts", 0x20, std::nullopt, {{Kind::kNodeDesc, {}, "host-1* HCA-1", Membership::kFull}}, ""});
  auto back = parsePartitionsConf(formatPartitionsConf(parts), "x", DefaultRule::kNone);
  ASSERT_TRUE(back.ok()) << back.error().message << "\n" << formatPartitionsConf(parts);
  ASSERT_EQ(back->size(), parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ((*back)[i].pkey, parts[i].pkey);
    EXPECT_EQ((*back)[i].name, parts[i].name);
    EXPECT_EQ((*back)[i].ipoib, parts[i].ipoib);
    EXPECT_EQ((*back)[i].members, parts[i].members) << formatPartitionsConf(parts);
  }
}

TEST(PartitionsConf, HostileInputIsAnErrorNotACrash) {
  for (std::string_view s : {";;;;", ":", "=:;", "a=:;", "a=0x1,:;", ",,,:,,,;", "a=1:=full;", "a=1:node:;",
                             "a=1:mgid=;", "\xff\xfe:;", "a=1 : defmember=x ;"}) {
    auto r = parsePartitionsConf(s, "p");
    (void)r;
  }
  SUCCEED();
}

TEST(PartitionsYaml, ParsedWithMembersAndIpoib) {
  auto r = parseConfig(R"(partitions:
  - name: tenant-a
    pkey: 0x0001
    members: [0x0002c903000b2241, "node:host-1*=limited"]
    ipoib: {mtu: 5, sl: 2}
  - name: storage
    pkey: 2
    membership: limited
    members: [ALL_CAS, SELF=full]
    ipoib: true
)",
                       "ibsm.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->partitions.size(), 2u);
  EXPECT_EQ(r->partitions[0].members[0].membership, Membership::kFull);  // YAML's default: full
  EXPECT_EQ(r->partitions[0].members[1].kind, Kind::kNodeDesc);
  EXPECT_EQ(r->partitions[0].members[1].pattern, "host-1*");
  EXPECT_EQ(r->partitions[0].ipoib->mtu, 5);
  EXPECT_EQ(r->partitions[0].ipoib->sl, 2);
  EXPECT_EQ(r->partitions[0].origin, "ibsm.yaml:2:5");
  EXPECT_EQ(r->partitions[1].members[0].membership, Membership::kLimited);
  EXPECT_EQ(r->partitions[1].ipoib, fabric::IpoibGroup{});
  // Round trip through toYaml.
  auto back = parseConfig(toYaml(*r), "dump.yaml");
  ASSERT_TRUE(back.ok()) << back.error().message << "\n" << toYaml(*r);
  ASSERT_EQ(back->partitions.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back->partitions[i].members, r->partitions[i].members);
    EXPECT_EQ(back->partitions[i].ipoib, r->partitions[i].ipoib);
    EXPECT_EQ(back->partitions[i].pkey, r->partitions[i].pkey);
  }
}

TEST(PartitionsYaml, ErrorsNameFileLineColumnAndKey) {
  auto err = [](std::string_view text) {
    auto r = parseConfig(text, "ibsm.yaml");
    return r.ok() ? "(parsed fine)" : r.error().message;
  };
  EXPECT_EQ(err("partitions:\n  - name: a\n    pkey: 0x8000\n"),
            "ibsm.yaml:3:11: partitions: 0x8000 is out of range 1..32767");
  EXPECT_EQ(err("partitions:\n  - name: a\n    pkey: 1\n    members: [ALL=fool]\n"),
            "ibsm.yaml:4:15: partitions: 'fool' is not a membership (full, limited or both)");
  EXPECT_EQ(
      err("partitions:\n  - name: a\n    pkey: 1\n    colour: red\n"),
      "ibsm.yaml:4:5: partitions: unknown partition key \"colour\" (known: name, pkey, membership, members, "
      "ipoib)");
  EXPECT_EQ(err("partitions:\n  - name: a\n"),
            "ibsm.yaml:2:5: partitions: partition \"a\" needs a pkey (0x0001..0x7fff)");
  EXPECT_EQ(err("partitions:\n  - name: a\n    pkey: 1\n  - name: b\n    pkey: 1\n"),
            "ibsm.yaml:2:3: partitions: partition 'b' (ibsm.yaml:4:5): P_Key 0x0001 is already used by "
            "partition 'a' "
            "(ibsm.yaml:2:5)");
  EXPECT_EQ(err("partitions: 3\n"), "ibsm.yaml:1:13: partitions: expected a list of partitions, got \"3\"");
}

TEST(PartitionsFile, ReadRelativeToTheConfigAndErrorsNameTheFile) {
  namespace fs = std::filesystem;
  std::string tmpl = (fs::temp_directory_path() / "ibsm_part_test.XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const fs::path dir = tmpl;
  std::ofstream(dir / "partitions.conf")
      << "# site partitions\nDefault=0x7fff,ipoib: ALL=full;\nb=0x2: SELF=full;\n";
  std::ofstream(dir / "ibsm.yaml")
      << "paths:\n  partitions_conf: partitions.conf\npartitions:\n  - name: a\n    pkey: 1\n";
  auto r = loadConfigFile((dir / "ibsm.yaml").string());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->paths.partitionsConf, (dir / "partitions.conf").string());
  ASSERT_EQ(r->partitionsFile.size(), 2u);
  EXPECT_EQ(r->partitionsFile[1].origin, (dir / "partitions.conf").string() + ":3");
  EXPECT_EQ(r->allPartitions().size(), 3u);
  // A reload that finds the file changed reports it.
  std::ofstream(dir / "partitions.conf") << "Default=0x7fff,ipoib: ALL=full;\nb=0x2: SELF=full, ALL_CAS;\n";
  auto again = loadConfigFile((dir / "ibsm.yaml").string());
  ASSERT_TRUE(again.ok());
  ConfigDiff diff = diffConfig(*r, *again);
  EXPECT_TRUE(diff.partitions);
  // Errors: the partitions file's own line; a P_Key used by the YAML and the file.
  std::ofstream(dir / "partitions.conf") << "Default=0x7fff: ALL=full;\n\nb=0x2: SELF=fool;\n";
  EXPECT_EQ(loadConfigFile((dir / "ibsm.yaml").string()).error().message,
            (dir / "partitions.conf").string() + ":3: b: 'fool' is not a membership (full, limited or both)");
  std::ofstream(dir / "partitions.conf") << "other=0x1: ALL=full;\n";
  std::string m = loadConfigFile((dir / "ibsm.yaml").string()).error().message;
  EXPECT_NE(m.find("P_Key 0x0001 is already used by partition 'a'"), std::string::npos) << m;
  EXPECT_NE(m.find((dir / "partitions.conf").string() + ":1"), std::string::npos) << m;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ibsm::config
