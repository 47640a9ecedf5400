// LeRobot metadata: info.json parsing (nlohmann-json), the v3 episodes tables (ParquetFile), and
// the path-template formatter shared by v3 and v2.1 names.
#include "core/lerobot/lerobot_meta.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

#include "core/base/key.h"
#include "core/lerobot/parquet_reader.h"

namespace packfs {
namespace {

using Json = nlohmann::json;

// Fields each template may use, by what it describes.
const std::set<std::string>& V3Fields() {
  static const std::set<std::string> kFields = {"chunk_index", "file_index", "video_key"};
  return kFields;
}
const std::set<std::string>& V2Fields() {
  static const std::set<std::string> kFields = {"episode_chunk", "episode_index", "video_key"};
  return kFields;
}

// Checks that a template formats with the allowed field names (values are placeholders).
Status CheckTemplate(const std::string& tmpl, const std::set<std::string>& allowed,
                     const std::string& what) {
  std::map<std::string, TemplateValue> fields;
  for (const auto& f : allowed) {
    fields[f] = f == "video_key" ? TemplateValue(std::string("x")) : TemplateValue(uint64_t{0});
  }
  auto r = FormatLeRobotTemplate(tmpl, fields);
  return r.ok() ? Status::OK() : r.status().WithPrefix(what);
}

}  // namespace

Result<std::string> FormatLeRobotTemplate(std::string_view tmpl,
                                          const std::map<std::string, TemplateValue>& fields) {
  const std::string where = "path template '" + std::string(tmpl) + "'";
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    const char c = tmpl[i];
    if (c == '}') {
      if (i + 1 < tmpl.size() && tmpl[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      return Status::InvalidArgument(where + " has an unmatched '}'");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < tmpl.size() && tmpl[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = tmpl.find('}', i);
    if (close == std::string_view::npos) return Status::InvalidArgument(where + " has an unclosed '{'");
    std::string_view field = tmpl.substr(i + 1, close - i - 1);
    std::string_view spec;
    if (auto colon = field.find(':'); colon != std::string_view::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    auto it = fields.find(std::string(field));
    if (it == fields.end()) {
      std::string known;
      for (const auto& [k, v] : fields) known += (known.empty() ? "" : ", ") + k;
      return Status::InvalidArgument(where + " uses unknown field '" + std::string(field) +
                                     "' (known: " + known + ")");
    }
    if (const auto* s = std::get_if<std::string>(&it->second)) {
      if (!spec.empty()) {
        return Status::InvalidArgument(where + " gives string field '" + std::string(field) +
                                       "' a numeric format");
      }
      out += *s;
    } else {
      const std::string digits = std::to_string(std::get<uint64_t>(it->second));
      size_t width = 0;
      if (!spec.empty()) {
        bool good = spec.back() == 'd';
        std::string_view w = spec.substr(0, spec.size() - 1);
        if (!w.empty() && w[0] == '0') w.remove_prefix(1);
        for (char d : w) good = good && d >= '0' && d <= '9';
        good = good && w.size() <= 2;
        if (!good) {
          return Status::InvalidArgument(where + " has format spec '" + std::string(spec) +
                                         "' (supported: {name}, {name:d}, {name:0Nd})");
        }
        for (char d : w) width = width * 10 + static_cast<size_t>(d - '0');
      }
      if (digits.size() < width) out.append(width - digits.size(), '0');
      out += digits;
    }
    i = close;
  }
  return out;
}

Result<LeRobotInfo> ParseLeRobotInfo(std::string_view json_text,
                                     const std::string& path_for_messages) {
  const std::string& where = path_for_messages;
  Json j;
  try {
    j = Json::parse(json_text);
  } catch (const Json::exception& e) {
    return Status::Corruption(where + " is not valid JSON: " + e.what());
  }
  if (!j.is_object()) return Status::Corruption(where + " is not a JSON object");
  auto bad = [&](const char* field, const char* want) {
    return Status::InvalidArgument(where + ": field \"" + std::string(field) + "\" is missing or not " +
                                   want);
  };
  LeRobotInfo info;
  auto str = [&](const char* field, std::string* out) {
    auto it = j.find(field);
    if (it == j.end() || !it->is_string()) return false;
    *out = it->get<std::string>();
    return true;
  };
  auto uint = [&](const char* field, uint64_t* out) {
    auto it = j.find(field);
    if (it == j.end() || !it->is_number_unsigned()) return false;
    *out = it->get<uint64_t>();
    return true;
  };
  if (!str("codebase_version", &info.codebase_version)) return bad("codebase_version", "a string");
  if (auto it = j.find("fps"); it != j.end() && it->is_number()) info.fps = it->get<double>();
  if (!(info.fps > 0) || !std::isfinite(info.fps)) return bad("fps", "a positive number");
  if (!uint("chunks_size", &info.chunks_size) || info.chunks_size == 0) {
    return bad("chunks_size", "a positive integer");
  }
  if (!uint("total_episodes", &info.total_episodes)) {
    return bad("total_episodes", "a non-negative integer");
  }
  if (!str("data_path", &info.data_path)) return bad("data_path", "a string");
  if (auto it = j.find("video_path"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return bad("video_path", "a string or null");
    info.video_path = it->get<std::string>();
  }
  auto features = j.find("features");
  if (features == j.end() || !features->is_object()) return bad("features", "an object");
  for (const auto& [key, feature] : features->items()) {
    if (!feature.is_object()) continue;
    auto dtype = feature.find("dtype");
    if (dtype != feature.end() && dtype->is_string() && *dtype == "video") {
      // A camera name becomes a directory of the mount and of converted pack sets: it must be
      // one safe path component, so a hostile info.json cannot place files outside the tree.
      if (key.find('/') != std::string::npos || !ValidateKey(key).ok()) {
        return Status::InvalidArgument(where + ": video feature " + QuoteKey(key) +
                                       " is not usable as a directory name (it must be one path "
                                       "component: no '/', not '.' or '..', valid UTF-8)");
      }
      info.video_keys.push_back(key);
    }
  }
  std::sort(info.video_keys.begin(), info.video_keys.end());
  if (!info.video_keys.empty() && info.video_path.empty()) {
    return Status::InvalidArgument(where + " has video features but no \"video_path\"");
  }
  const auto& allowed = IsLeRobotV3(info) ? V3Fields() : V2Fields();
  PACKFS_RETURN_IF_ERROR(CheckTemplate(info.data_path, allowed, where + ": data_path"));
  if (!info.video_path.empty()) {
    PACKFS_RETURN_IF_ERROR(CheckTemplate(info.video_path, allowed, where + ": video_path"));
  }
  return info;
}

bool IsLeRobotV3(const LeRobotInfo& info) {
  const std::string& v = info.codebase_version;
  return v == "v3" || v.rfind("v3.", 0) == 0;
}

namespace {

// A required flat column with no nulls.
template <typename T>
Result<std::vector<T>> Required(Result<std::vector<std::optional<T>>> col, const ParquetFile& f,
                                const std::string& column) {
  if (!col.ok()) return col.status();
  std::vector<T> out;
  out.reserve(col->size());
  for (size_t i = 0; i < col->size(); ++i) {
    if (!(*col)[i]) {
      return Status::Corruption("Parquet file " + f.name() + ", column " + column + ": row " +
                                std::to_string(i) + " is null");
    }
    out.push_back(*(*col)[i]);
  }
  return out;
}

Result<std::vector<uint64_t>> RequiredUint(const ParquetFile& f, const std::string& column) {
  PACKFS_ASSIGN_OR_RETURN(auto v, Required(f.ReadInt64(column), f, column));
  std::vector<uint64_t> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < 0) {
      return Status::Corruption("Parquet file " + f.name() + ", column " + column + ": row " +
                                std::to_string(i) + " is negative (" + std::to_string(v[i]) + ")");
    }
    out.push_back(static_cast<uint64_t>(v[i]));
  }
  return out;
}

Status ReadOneFile(const ShardSource& src, const LeRobotInfo& info, std::vector<Episode>* out) {
  PACKFS_ASSIGN_OR_RETURN(ParquetFile f, ParquetFile::Open(src));
  PACKFS_ASSIGN_OR_RETURN(auto index, RequiredUint(f, "episode_index"));
  PACKFS_ASSIGN_OR_RETURN(auto length, RequiredUint(f, "length"));
  PACKFS_ASSIGN_OR_RETURN(auto tasks, f.ReadStringList("tasks"));
  const size_t n = index.size();
  std::vector<Episode> eps(n);
  for (size_t i = 0; i < n; ++i) {
    eps[i].index = index[i];
    eps[i].length = length[i];
    eps[i].tasks = std::move(tasks[i]);
  }
  for (const auto& key : info.video_keys) {
    const std::string p = "videos/" + key + "/";
    PACKFS_ASSIGN_OR_RETURN(auto chunk, RequiredUint(f, p + "chunk_index"));
    PACKFS_ASSIGN_OR_RETURN(auto file, RequiredUint(f, p + "file_index"));
    PACKFS_ASSIGN_OR_RETURN(auto from, Required(f.ReadDouble(p + "from_timestamp"), f,
                                                p + "from_timestamp"));
    PACKFS_ASSIGN_OR_RETURN(auto to, Required(f.ReadDouble(p + "to_timestamp"), f,
                                              p + "to_timestamp"));
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(from[i]) || !std::isfinite(to[i]) || from[i] < 0 || to[i] < from[i]) {
        return Status::Corruption("Parquet file " + f.name() + ": episode " +
                                  std::to_string(index[i]) + " of " + key + " spans " +
                                  std::to_string(from[i]) + " to " + std::to_string(to[i]) + " s");
      }
      eps[i].videos.push_back(EpisodeVideo{key, chunk[i], file[i], from[i], to[i]});
    }
  }
  for (auto& e : eps) out->push_back(std::move(e));
  return Status::OK();
}

}  // namespace

Result<std::vector<Episode>> ReadLeRobotEpisodes(const std::vector<const ShardSource*>& files,
                                                 const LeRobotInfo& info) {
  std::vector<Episode> all;
  std::map<uint64_t, std::string> seen;  // episode index -> file that defined it
  for (const ShardSource* src : files) {
    const size_t before = all.size();
    PACKFS_RETURN_IF_ERROR(ReadOneFile(*src, info, &all));
    for (size_t i = before; i < all.size(); ++i) {
      auto [it, fresh] = seen.emplace(all[i].index, src->name());
      if (!fresh) {
        return Status::Corruption("LeRobot episodes table " + src->name() + " repeats episode " +
                                  std::to_string(all[i].index) + " (also in " + it->second + ")");
      }
    }
  }
  std::sort(all.begin(), all.end(),
            [](const Episode& a, const Episode& b) { return a.index < b.index; });
  return all;
}

Result<std::string> LeRobotVideoPath(const LeRobotInfo& info, const EpisodeVideo& video) {
  return FormatLeRobotTemplate(info.video_path, {{"video_key", video.video_key},
                                                 {"chunk_index", video.chunk_index},
                                                 {"file_index", video.file_index}});
}

std::string LeRobotV21VideoPath(const LeRobotInfo& info, uint64_t episode,
                                std::string_view video_key) {
  const uint64_t chunks = info.chunks_size == 0 ? 1000 : info.chunks_size;  // LeRobot's default
  auto r = FormatLeRobotTemplate(
      "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
      {{"episode_chunk", episode / chunks},
       {"video_key", std::string(video_key)},
       {"episode_index", episode}});
  return std::move(r).value();  // a fixed, valid template cannot fail
}

std::string DescribeEpisodeTimestampMismatch(const std::vector<Episode>& episodes, double fps) {
  if (!(fps > 0)) return "";
  uint64_t off = 0, with_video = 0;  // episodes
  double lo = 0, hi = 0;  // (to - from) * fps - length, over the videos that disagree
  bool any = false;
  for (const Episode& e : episodes) {
    bool disagrees = false;
    for (const EpisodeVideo& v : e.videos) {
      const double frames =
          (v.to_timestamp - v.from_timestamp) * fps - static_cast<double>(e.length);
      if (std::fabs(frames) <= 0.25) continue;
      lo = any ? std::min(lo, frames) : frames;
      hi = any ? std::max(hi, frames) : frames;
      any = disagrees = true;
    }
    with_video += e.videos.empty() ? 0 : 1;
    off += disagrees ? 1 : 0;
  }
  if (off == 0) return "";
  auto frames_text = [&](double f) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%+.2f frames (%+.1f ms)", f, f * 1000 / fps);
    return std::string(buf);
  };
  std::string by = frames_text(lo);
  if (hi - lo > 0.01) by = "from " + by + " to " + frames_text(hi);
  return "meta/episodes: to_timestamp - from_timestamp differs from length / fps in " +
         std::to_string(off) + " of " + std::to_string(with_video) + " episodes, by " + by +
         "; each episode video shows `length` frames from its from_timestamp";
}

std::string LeRobotEpisodeJsonLine(const Episode& episode) {
  nlohmann::ordered_json j;
  j["episode_index"] = episode.index;
  j["tasks"] = episode.tasks;
  j["length"] = episode.length;
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace packfs
