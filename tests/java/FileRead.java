import java.io.BufferedReader;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileNotFoundException;
import java.io.FileReader;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.util.Scanner;

/** Reads args[0] every way FileInputStream offers, then tries to open args[1] (missing). */
public class FileRead {
    public static void main(String[] args) throws Exception {
        String path = args[0];
        try (BufferedReader r = new BufferedReader(new FileReader(path))) {
            String line;
            int n = 0;
            while ((line = r.readLine()) != null) {
                System.out.println("line " + (++n) + ": " + line);
            }
        }
        try (FileInputStream in = new FileInputStream(path)) {
            System.out.println("available " + in.available());
            System.out.println("skipped " + in.skip(3));
            System.out.println("first byte " + in.read());
            byte[] buf = new byte[7];
            int k;
            int total = 0;
            while ((k = in.read(buf, 0, buf.length)) != -1) {
                total += k;
                String s = new String(buf, 0, k, StandardCharsets.UTF_8);
                System.out.println("chunk " + k + " [" + s.replace("\n", "|") + "]");
            }
            System.out.println("eof " + in.read() + " total " + total);
        }
        try (InputStream in = new FileInputStream(path)) {
            System.out.println("readAllBytes " + in.readAllBytes().length);
        }
        try (Scanner s = new Scanner(new FileInputStream(path), "UTF-8")) {
            int words = 0;
            while (s.hasNext()) {
                s.next();
                words++;
            }
            System.out.println("words " + words);
        }
        // Scanner(File) reads through the stream's FileChannel.
        try (Scanner s = new Scanner(new File(path), "UTF-8")) {
            System.out.println("scanner first line: " + s.nextLine());
        }
        try (FileInputStream in = new FileInputStream(path)) {
            FileChannel ch = in.getChannel();
            ByteBuffer bb = ByteBuffer.allocate(5);
            ch.read(bb, 6);
            System.out.println("channel size " + ch.size() + " pread [" + new String(bb.array(), 0, bb.position(), StandardCharsets.UTF_8) + "]");
            System.out.println("channel position " + ch.position());
        }
        FileInputStream closed = new FileInputStream(path);
        closed.close();
        try {
            closed.read();
            System.out.println("read after close worked");
        } catch (IOException e) {
            System.out.println("after close: " + e.getMessage());
        }
        try (FileInputStream in = new FileInputStream(args[1])) {
            System.out.println("opened " + args[1] + ": " + in.read());
        } catch (FileNotFoundException e) {
            System.out.println("missing: " + e.getMessage());
        }
    }
}
