# frozen_string_literal: true

require_relative "lib/thrift_native/version"

Gem::Specification.new do |spec|
  spec.name = "thrift_native"
  spec.version = ThriftNative::VERSION
  spec.summary = "A Rust drop-in for Apache Thrift's C accelerator, faster and allocation-free where it can be"
  spec.description = <<~TEXT.tr("\n", " ").strip
    Replaces the thrift gem's C accelerator (thrift 0.14 to master) with one written in Rust: BinaryProtocolAccelerated,
    CompactProtocol, MemoryBufferTransport, FramedTransport, BufferedTransport and HeaderTransport methods, and
    Thrift::Struct and Thrift::Union read and write, with the results, bytes and exceptions of the loaded thrift's
    own C accelerator; JsonProtocol's methods and its struct reads and writes natively too, with the pure-Ruby
    library's. Also ThriftNative::GzipWriter, a Zlib::GzipWriter work-alike that makes no garbage per write.
  TEXT
  spec.authors = ["thrift_native developers"]
  spec.license = "Apache-2.0"
  spec.required_ruby_version = ">= 3.1"

  # Not cargo's build outputs (a target/ directory under ext/ holds generated .rs files) nor the cargo-fuzz crate.
  spec.files = Dir["lib/**/*.rb", "ext/**/*.{rs,rb,toml}", "Cargo.toml", "Cargo.lock", "README.md", "LICENSE"]
               .grep_v(%r{(\A|/)(target|fuzz)/})
  spec.require_paths = ["lib"]
  spec.extensions = ["ext/thrift_native/extconf.rb"]
end
