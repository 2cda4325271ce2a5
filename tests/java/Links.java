import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/** Where a symbolic link leads, by each API, named relative to the working directory. */
public class Links {
    public static void main(String[] args) throws Exception {
        Path cwd = Paths.get("").toRealPath();
        System.out.println("toRealPath " + cwd.relativize(Paths.get("link").toRealPath()));
        String canon = new File("link/f.txt").getCanonicalPath();
        System.out.println("canonical " + cwd.relativize(Paths.get(canon)));
        System.out.println("readlink " + Files.readSymbolicLink(Paths.get("link")));
        try {
            Paths.get("gone").toRealPath();
            System.out.println("gone found");
        } catch (Exception e) {
            System.out.println("gone " + e.getClass().getSimpleName());
        }
        try {
            Files.readSymbolicLink(Paths.get("data"));
            System.out.println("data is a link");
        } catch (Exception e) {
            System.out.println("data " + e.getClass().getSimpleName());
        }
    }
}
