// JUnit XML of a run, for Jenkins (junit and xunit plugins) and GitLab test reports. Valid
// against the Jenkins xunit plugin's junit-10.xsd (tests/data/junit/junit-10.xsd):
//   <testsuites name tests failures errors time>
//     <testsuite name=suite tests failures errors skipped time timestamp=started_at hostname>
//       <properties>  run, platform, fingerprint, backend, stack.<key> for every (flattened)
//                     key of versions_json, label.<key> for every label
//       <testcase classname=check_id name=case_id time=duration_s>
//         fail, xpass            → <failure type=status message>metrics and details</failure>
//         error, crash, timeout  → <error type=status message>metrics and details</error>
//         skip, xfail            → <skipped message/>
//         pass                   → nothing
// A status this writer does not know is reported as an <error> of that type.
#pragma once

#include <string>
#include <string_view>

#include "store/run_data.h"

namespace h0::report {

std::string junit_xml(const store::RunData& run);

// Writes junit_xml(run) atomically (temporary file, then rename). Throws InputError naming
// `path` if it cannot be written.
void write_junit(const std::string& path, const store::RunData& run);

// `s` made safe for XML 1.0 character data (attribute = false) or a double-quoted attribute
// value (attribute = true): & < > " ' become entities; control characters other than \t \n \r
// become the visible text "\xNN"; invalid UTF-8 bytes and U+FFFE/U+FFFF become U+FFFD. In
// attributes \t \n \r are written as character references so that they survive attribute-value
// normalization; in text \r is (line-end normalization would drop it).
std::string xml_escape(std::string_view s, bool attribute);

}  // namespace h0::report
