# frozen_string_literal: true

require "tmpdir"

# Ruby's own tests of Zlib::GzipReader and Zlib::GzipFile (test/zlib/test_zlib.rb of the running Ruby's release, from
# the shared folder's rubies/, which holds 3.2, 3.4 and 4.0; found as bin/rubies finds it: THRIFT_NATIVE_SHARED,
# ../shared, /work/shared, so that a clone outside /work runs them too), run with ThriftNative::GzipReader in Zlib::GzipReader's place: the
# same totals as with Zlib's own, no failure. The tests are read at test time, from outside the project.
RSpec.describe "Ruby's own GzipReader tests" do
  def swap_code
    <<~RUBY
      require "zlib"
      require "thrift_native"
      Zlib.send(:remove_const, :GzipReader)
      Zlib.const_set(:GzipReader, ThriftNative::GzipReader)
    RUBY
  end

  it "pass with ThriftNative::GzipReader as Zlib::GzipReader, as they pass with Zlib's" do
    folders = [ENV.fetch("THRIFT_NATIVE_SHARED", nil), File.expand_path("../shared", SpecSupport::ROOT), "/work/shared"]
    tarball = folders.compact.map { |dir| File.join(dir, "rubies", "ruby-#{RUBY_VERSION}.tar.xz") }.find { File.exist?(_1) }
    skip "no release source of Ruby #{RUBY_VERSION} in the shared folder's rubies/ (it has 3.2, 3.4, 4.0)" unless tarball

    Dir.mktmpdir do |dir|
      system("tar", "xJf", tarball, "-C", dir, "--wildcards", "*/test/zlib/*", "*/tool/lib/*", exception: true)
      source = Dir[File.join(dir, "ruby-*")].first
      swap = File.join(dir, "swap.rb")
      File.write(swap, swap_code)
      run = lambda do |*prelude|
        ChildRuby.capture("-I", "tool/lib", "-I", SpecSupport::LIB, *prelude, "test/zlib/test_zlib.rb",
                          "-n", "/GzipReader|GzipFile/", chdir: source, timeout: 600)
      end
      totals = ->(out) { out[/^\d+ tests, \d+ assertions, .*$/] }
      zlib_out, = run.call
      ours_out, ours_err, ok = run.call("-r", swap)
      expect(totals.(zlib_out)).to match(/ 0 failures, 0 errors/)
      expect([ok, totals.(ours_out)]).to eq([true, totals.(zlib_out)]), ours_out + ours_err
      expect(totals.(ours_out)[/^\d+/].to_i).to be >= 35
    end
  end
end
