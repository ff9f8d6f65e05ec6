//===- Metrics.cpp - Prometheus metrics of wooly-serve ----------*- C++ -*-===//

#include "Metrics.h"

#include <httplib.h>

#include <cmath>
#include <thread>

using namespace wooly::server;

void PrometheusWriter::family(const std::string &name, const char *type,
                              const char *help) {
  text += "# HELP " + name + " " + help + "\n";
  text += "# TYPE " + name + " " + type + "\n";
}

void PrometheusWriter::sample(const std::string &name, const Labels &labels,
                              double value) {
  text += name;
  if (!labels.empty()) {
    text += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i)
        text += ',';
      text += labels[i].first + "=\"";
      for (char c : labels[i].second) {
        if (c == '\\')
          text += "\\\\";
        else if (c == '"')
          text += "\\\"";
        else if (c == '\n')
          text += "\\n";
        else
          text += c;
      }
      text += '"';
    }
    text += '}';
  }
  char buf[64];
  if (std::isnan(value))
    snprintf(buf, sizeof buf, " NaN\n");
  else if (value == std::floor(value) && std::fabs(value) < 1e15)
    snprintf(buf, sizeof buf, " %.0f\n", value);
  else
    snprintf(buf, sizeof buf, " %.9g\n", value);
  text += buf;
}

class MetricsEndpoint::Impl {
public:
  httplib::Server http;
  std::thread thread;
  std::string host;
  int port = 0;
};

MetricsEndpoint::MetricsEndpoint(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}

MetricsEndpoint::~MetricsEndpoint() {
  impl->http.stop();
  if (impl->thread.joinable())
    impl->thread.join();
}

std::string MetricsEndpoint::address() const {
  return impl->host + ":" + std::to_string(impl->port);
}

llvm::Expected<std::unique_ptr<MetricsEndpoint>>
MetricsEndpoint::start(const std::string &hostPort,
                       std::function<std::string()> render) {
  size_t colon = hostPort.rfind(':');
  if (colon == std::string::npos)
    return llvm::createStringError("--metrics needs HOST:PORT, not '" +
                                   hostPort + "'");
  auto impl = std::make_unique<Impl>();
  impl->host = hostPort.substr(0, colon);
  int port = 0;
  try {
    port = std::stoi(hostPort.substr(colon + 1));
  } catch (...) {
    port = -1;
  }
  if (port < 0 || port > 65535)
    return llvm::createStringError("--metrics: bad port in '" + hostPort + "'");
  impl->http.Get(
      "/metrics", [render](const httplib::Request &, httplib::Response &res) {
        res.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
      });
  impl->http.Get("/", [](const httplib::Request &, httplib::Response &res) {
    res.set_content("wooly-serve: metrics at /metrics\n", "text/plain");
  });
  impl->port = port == 0
                   ? impl->http.bind_to_any_port(impl->host)
                   : (impl->http.bind_to_port(impl->host, port) ? port : -1);
  if (impl->port < 0)
    return llvm::createStringError("cannot serve metrics on '" + hostPort +
                                   "' (address in use or not local)");
  Impl *raw = impl.get();
  impl->thread = std::thread([raw] { raw->http.listen_after_bind(); });
  return std::unique_ptr<MetricsEndpoint>(new MetricsEndpoint(std::move(impl)));
}
