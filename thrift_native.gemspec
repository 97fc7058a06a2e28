# frozen_string_literal: true

require_relative "lib/thrift_native/version"

Gem::Specification.new do |spec|
  spec.name = "thrift_native"
  spec.version = ThriftNative::VERSION
  spec.summary = "A Rust drop-in for Apache Thrift's C accelerator, with allocation-free reads"
  spec.description = "Native BinaryProtocolAccelerated and MemoryBufferTransport for the thrift gem, written in Rust."
  spec.authors = ["thrift_native developers"]
  spec.license = "Apache-2.0"
  spec.required_ruby_version = ">= 3.1"

  # Not cargo's build outputs (a target/ directory under ext/ holds generated .rs files) nor the cargo-fuzz crate.
  spec.files = Dir["lib/**/*.rb", "ext/**/*.{rs,rb,toml}", "Cargo.toml", "Cargo.lock", "README.md"]
               .grep_v(%r{(\A|/)(target|fuzz)/})
  spec.require_paths = ["lib"]
  spec.extensions = ["ext/thrift_native/extconf.rb"]
end
